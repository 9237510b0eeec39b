package httpapi

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// requestBodies is the Go type every POST route decodes its body into.
var requestBodies = map[string]reflect.Type{
	"/v1/data-import/validate-account/":                        reflect.TypeFor[dataimport.Account](),
	"/v1/data-import/account-import-process/create-or-update/": reflect.TypeFor[dataimport.Account](),
	"/v1/data-import/account-import-process/process/":          reflect.TypeFor[createRequest](),
	"/v1/data-import/payment-instruction/create/":              reflect.TypeFor[dataimport.PaymentInstructionRequest](),
	"/v1/data-import/notes/create/":                            reflect.TypeFor[dataimport.NotesRequest](),
	"/v1/data-import/transactions/create/":                     reflect.TypeFor[dataimport.TransactionsRequest](),
	"/v1/data-import/historical-statements/create/":            reflect.TypeFor[dataimport.StatementsRequest](),
	"/v1/data-import/validate-products/":                       reflect.TypeFor[dataimport.ProductsRequest](),
	"/v1/data-import/products/create-or-update/":               reflect.TypeFor[dataimport.ProductsRequest](),
	// v2 wraps the account (decoded by the same bounded binder) in "payload".
	"/v2/data-import/accounts/validate/": reflect.TypeFor[struct {
		Payload dataimport.Account `json:"payload"`
	}](),
	"/v2/data-import/accounts/": reflect.TypeFor[struct {
		Payload    dataimport.Account `json:"payload"`
		TaskParams *v2TaskParams      `json:"task_params"`
	}](),
	"/v2/data-import/accounts/:supplier/:external/cancel/": nil, // no body
	"/v1/data-import/jobs/":                                nil, // NDJSON, one Account per line (validated line by line)
	"/v1/data-import/jobs/:id/cancel/":                     nil, // no body
	"/v1/data-import/jobs/:id/retry/":                      nil, // no body
	"/v1/data-import/webhooks/":                            reflect.TypeFor[webhookRequest](),
	"/v1/data-import/validate-accounts/":                   nil, // NDJSON, one Account per line (≤ 1000 lines), each decoded like validate-account
	"/v1/data-import/webhooks/:id/rotate-secret/":          nil, // no body
	"/v1/data-import/webhooks/:id/test/":                   nil, // no body
}

// Every POST route's body bounds each of its arrays, and the OpenAPI
// document states the same maxima (maxItems). A new route, a new array or
// a changed maximum fails here until both agree. GraphQL bodies are
// free-form JSON and are bounded by size instead (maxGraphQLBodyBytes).
func TestEveryRequestArrayIsBoundedAndDocumented(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, r := range New(Config{}, Deps{}).engine.Routes() {
		if r.Method != "POST" {
			continue
		}
		if r.Path == "/v1/graphql/" {
			if maxGraphQLBodyBytes > 64<<10 {
				t.Errorf("GraphQL bodies may be %d bytes", maxGraphQLBodyBytes)
			}
			continue
		}
		typ, ok := requestBodies[r.Path]
		if !ok {
			t.Errorf("POST %s: add its body type to requestBodies", r.Path)
			continue
		}
		if typ == nil {
			continue // reads no body
		}
		schema := lookup(t, doc, doc, "paths", r.Path, "post", "requestBody", "content", "application/json", "schema")
		checkBounded(t, doc, typ, schema, r.Path)
	}
}

// checkBounded walks a Go type and its schema side by side.
func checkBounded(t *testing.T, doc map[string]any, typ reflect.Type, schema map[string]any, where string) {
	t.Helper()
	fields, err := dataimport.BodyFields(typ)
	if err != nil { // an array without a maximum, say
		t.Errorf("%s: %v", where, err)
		return
	}
	props, _ := schema["properties"].(map[string]any)
	for _, f := range fields {
		at := where + " ." + f.Name
		prop, ok := props[f.Name].(map[string]any)
		if !ok {
			t.Errorf("%s: not in the OpenAPI document", at)
			continue
		}
		prop = resolve(t, doc, prop)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Slice {
			if got, _ := prop["maxItems"].(float64); int(got) != f.MaxItems {
				t.Errorf("%s: maxItems %v in the OpenAPI document, %d in the code", at, prop["maxItems"], f.MaxItems)
			}
			items, _ := prop["items"].(map[string]any)
			prop = resolve(t, doc, items)
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && !dataimport.IsScalarType(ft) {
			checkBounded(t, doc, ft, prop, at)
		}
	}
}

func lookup(t *testing.T, doc map[string]any, v any, keys ...string) map[string]any {
	t.Helper()
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("no %v in the OpenAPI document", keys)
		}
		v = m[k]
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("no %v in the OpenAPI document", keys)
	}
	return resolve(t, doc, m)
}

// resolve follows a local $ref.
func resolve(t *testing.T, doc, schema map[string]any) map[string]any {
	t.Helper()
	for {
		ref, ok := schema["$ref"].(string)
		if !ok {
			return schema
		}
		schema = lookup(t, doc, doc, strings.Split(strings.TrimPrefix(ref, "#/"), "/")...)
	}
}
