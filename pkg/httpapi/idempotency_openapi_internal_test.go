package httpapi

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestOpenAPIDocumentsIdempotencyKeys: every POST route of the data-import
// group, present and future (the middleware serves them all), documents the
// Idempotency-Key header and the middleware's own answers, 409 and 422; and
// its 400 lists invalid_idempotency_key. A POST route added without them
// fails here.
func TestOpenAPIDocumentsIdempotencyKeys(t *testing.T) {
	type response struct {
		Ref     string `json:"$ref"`
		Content map[string]struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"content"`
	}
	type operation struct {
		Parameters []struct {
			Ref string `json:"$ref"`
		} `json:"parameters"`
		Responses map[string]response `json:"responses"`
	}
	var doc struct {
		Paths map[string]map[string]operation `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`:([^/]+)`)
	braces := regexp.MustCompile(`\{[^/}]+\}`)
	posts := 0
	for _, r := range New(Config{}, Deps{}).engine.Routes() {
		if r.Method != http.MethodPost || !(strings.HasPrefix(r.Path, "/v1/data-import/") || strings.HasPrefix(r.Path, "/v2/data-import/")) {
			continue
		}
		posts++
		// Route and document may name path parameters differently.
		path := param.ReplaceAllString(r.Path, "{}")
		var op operation
		ok := false
		for p, item := range doc.Paths {
			if braces.ReplaceAllString(p, "{}") == path {
				op, ok = item["post"]
			}
		}
		if !ok {
			t.Errorf("POST %s is not documented", path)
			continue
		}
		hasKey := false
		for _, p := range op.Parameters {
			hasKey = hasKey || p.Ref == "#/components/parameters/IdempotencyKey"
		}
		if !hasKey {
			t.Errorf("POST %s does not document the Idempotency-Key header (#/components/parameters/IdempotencyKey)", path)
		}
		for status, ref := range map[string]string{"409": "#/components/responses/IdempotencyKeyInUse", "422": "#/components/responses/IdempotencyKeyReused"} {
			// An operation with a 409 of its own lists both answers in one schema.
			if status == "409" && op.Responses[status].Ref == "" &&
				strings.Contains(string(op.Responses[status].Content["application/json"].Schema), `"idempotency_key_in_use"`) {
				continue
			}
			if op.Responses[status].Ref != ref {
				t.Errorf("POST %s: response %s is %q, want %s", path, status, op.Responses[status].Ref, ref)
			}
		}
		if s := string(op.Responses["400"].Content["application/json"].Schema); !strings.Contains(s, `"invalid_idempotency_key"`) {
			t.Errorf("POST %s: the 400 does not list invalid_idempotency_key", path)
		}
	}
	if posts == 0 {
		t.Fatal("no POST route under /v1/data-import/ or /v2/data-import/")
	}
}
