package httpapi

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestOpenAPIDocumentsEveryRoute compares the router with the OpenAPI
// document both ways: every route gin serves is an operation of the
// document, and every operation is a route. (Responses are checked against
// the document by every integration test, see pkg/testutil/contract.go.)
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`\{[^}]+\}|:[^/]+`)
	var documented []string
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				documented = append(documented, strings.ToUpper(method)+" "+param.ReplaceAllString(path, "{}"))
			}
		}
	}
	var served []string
	for _, r := range New(Config{}, Deps{}).engine.Routes() {
		served = append(served, r.Method+" "+param.ReplaceAllString(r.Path, "{}"))
	}
	slices.Sort(documented)
	slices.Sort(served)
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is not in the OpenAPI document (pkg/httpapi/openapi/openapi.json)", r)
		}
	}
	for _, op := range documented {
		if !slices.Contains(served, op) {
			t.Errorf("operation %s of the OpenAPI document is not served", op)
		}
	}
}
