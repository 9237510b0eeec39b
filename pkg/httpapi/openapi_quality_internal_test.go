package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
)

// The document's promises to generators and strict validators (issue 21):
// servers, a description on every tag and operation, and every status the
// middleware can answer declared on every operation it guards: 405 and 500
// everywhere (HandleMethodNotAllowed and the panic handler are global), 413
// and 415 on every POST (bodyRules), 401 and 503 on every authenticated
// data-import operation. Each declared status has the error envelope. (The
// Redocly lint in make test checks the rest of its recommended rules.)
func TestOpenAPIDeclaresEveryStatusTheMiddlewareAnswers(t *testing.T) {
	type response struct {
		Ref     string                     `json:"$ref"`
		Content map[string]json.RawMessage `json:"content"`
		Headers map[string]json.RawMessage `json:"headers"`
	}
	var doc struct {
		Servers []struct {
			URL string `json:"url"`
		} `json:"servers"`
		Tags []struct {
			Name, Description string
		} `json:"tags"`
		Paths map[string]map[string]struct {
			Description string              `json:"description"`
			Responses   map[string]response `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Servers) == 0 {
		t.Error("the document has no servers entry")
	}
	for _, tag := range doc.Tags {
		if strings.TrimSpace(tag.Description) == "" {
			t.Errorf("tag %q has no description", tag.Name)
		}
	}
	ops := 0
	for path, item := range doc.Paths {
		for method, op := range item {
			if method != "get" && method != "post" && method != "patch" {
				continue
			}
			ops++
			where := strings.ToUpper(method) + " " + path
			if strings.TrimSpace(op.Description) == "" {
				t.Errorf("%s has no description", where)
			}
			want := []string{"405", "500"}
			if method == "post" || method == "patch" {
				want = append(want, "413", "415")
			}
			if strings.HasPrefix(path, "/v1/data-import/") && path != OpenAPIPath || strings.HasPrefix(path, "/v2/") {
				want = append(want, "401", "503")
			}
			for _, status := range want {
				r, ok := op.Responses[status]
				if !ok {
					t.Errorf("%s does not declare %s", where, status)
					continue
				}
				if r.Ref == "" && len(r.Content) == 0 {
					t.Errorf("%s: %s has no body schema (the error envelope)", where, status)
				}
			}
		}
	}
	if ops < 20 {
		t.Fatalf("read only %d operations", ops)
	}
}
