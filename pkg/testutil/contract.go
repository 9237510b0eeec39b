package testutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/gridshift/dataimport/pkg/httpapi"
)

// The contract check: every request a Stack makes, and the real response it
// gets, is validated against the OpenAPI document the API serves
// (httpapi.OpenAPIDocument). Responses are always validated, including their
// status (an undocumented status is a failure) and headers; requests only
// when the API accepted them (2xx), since many tests send invalid requests on
// purpose. A mismatch fails the test with tb.Errorf. Operations and statuses
// seen are recorded for the whole test process (ContractCoverage).

// Contract is the loaded OpenAPI document, its router and its compiled
// schemas.
type Contract struct {
	Doc    *openapi3.T
	router routers.Router

	mu       sync.Mutex
	compiler *jsonschema.Compiler
	schemas  map[string]*jsonschema.Schema // by document location
	// Request bodies are read with the server's documented leniency: a
	// schema marked x-also-accepts-json-number (Decimal, Money) is a
	// string in the document, for generators, and the API also accepts a
	// JSON number there. Responses get no leniency.
	reqCompiler *jsonschema.Compiler
	reqSchemas  map[string]*jsonschema.Schema
}

// acceptsNumberKey marks a string schema whose value may also be sent as a
// JSON number.
const acceptsNumberKey = "x-also-accepts-json-number"

// lenientRequests returns a copy of the document tree in which every schema
// marked acceptsNumberKey admits numbers as well as strings.
func lenientRequests(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = lenientRequests(e)
		}
		if t[acceptsNumberKey] == true {
			out["type"] = []any{"string", "number"}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = lenientRequests(e)
		}
		return out
	}
	return v
}

var contract struct {
	once sync.Once
	c    *Contract
	err  error
}

// LoadContract loads and validates the OpenAPI document once per process.
func LoadContract() (*Contract, error) {
	contract.once.Do(func() {
		contract.c, contract.err = loadContract(httpapi.OpenAPIDocument())
	})
	return contract.c, contract.err
}

func loadContract(raw []byte) (*Contract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(raw)
	if err != nil {
		return nil, fmt.Errorf("openapi: load: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi: invalid document: %w", err)
	}
	// The document's servers entry is relative ("/", wherever it is
	// served); the suite's servers listen on random ports, so routes are
	// matched on the path alone.
	routed := *doc
	routed.Servers = nil
	r, err := legacy.NewRouter(&routed)
	if err != nil {
		return nil, fmt.Errorf("openapi: router: %w", err)
	}
	// The document's schemas are JSON Schema 2020-12 (OpenAPI 3.1), compiled
	// in place so that their $refs resolve within the document.
	tree, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	comp, err := newCompiler(tree)
	if err != nil {
		return nil, err
	}
	reqComp, err := newCompiler(lenientRequests(tree))
	if err != nil {
		return nil, err
	}
	return &Contract{Doc: doc, router: r, compiler: comp, schemas: map[string]*jsonschema.Schema{},
		reqCompiler: reqComp, reqSchemas: map[string]*jsonschema.Schema{}}, nil
}

func newCompiler(tree any) (*jsonschema.Compiler, error) {
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	comp.AssertFormat()
	if err := comp.AddResource(documentURL, tree); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	return comp, nil
}

// Operations lists every operation of the document as "METHOD /path/template".
func (c *Contract) Operations() []string {
	var ops []string
	for path, item := range c.Doc.Paths.Map() {
		for method := range item.Operations() {
			ops = append(ops, method+" "+path)
		}
	}
	slices.Sort(ops)
	return ops
}

// coverage is what the process exercised: operation → status → count.
var coverage = struct {
	sync.Mutex
	seen map[string]map[int]int
}{seen: map[string]map[int]int{}}

func recordCoverage(op string, status int) {
	coverage.Lock()
	defer coverage.Unlock()
	if coverage.seen[op] == nil {
		coverage.seen[op] = map[int]int{}
	}
	coverage.seen[op][status]++
}

// ContractCoverage returns, for each operation ("METHOD /path/template") a
// Stack has called so far in this process, how often each status came back.
// Requests that matched no operation are under "unrouted".
func ContractCoverage() map[string]map[int]int {
	coverage.Lock()
	defer coverage.Unlock()
	out := make(map[string]map[int]int, len(coverage.seen))
	for op, st := range coverage.seen {
		out[op] = maps.Clone(st)
	}
	return out
}

// sentBody keeps what a request sent, for request validation.
type sentBody struct {
	getBody func() (io.ReadCloser, error) // replayable bodies (strings, bytes)
	buf     bytes.Buffer                  // streamed bodies, as far as they were read
	over    bool                          // streamed body larger than maxRecordedBody
}

const maxRecordedBody = 16 << 20

// recordBody arranges for req's body to be available after it was sent.
func recordBody(req *http.Request) *sentBody {
	sb := &sentBody{}
	switch {
	case req.Body == nil || req.Body == http.NoBody:
	case req.GetBody != nil:
		sb.getBody = req.GetBody
	default:
		// Keeps ContentLength as it is: a streamed body stays chunked.
		req.Body = &teeBody{ReadCloser: req.Body, sb: sb}
	}
	return sb
}

type teeBody struct {
	io.ReadCloser
	sb *sentBody
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if n > 0 && !t.sb.over {
		if t.sb.buf.Len()+n > maxRecordedBody {
			t.sb.over = true
			t.sb.buf.Reset()
		} else {
			t.sb.buf.Write(p[:n])
		}
	}
	return n, err
}

// bytes returns the body as sent; ok is false when it is not known whole.
func (sb *sentBody) bytes() (b []byte, ok bool) {
	if sb.getBody != nil {
		rc, err := sb.getBody()
		if err != nil {
			return nil, false
		}
		defer rc.Close()
		b, err = io.ReadAll(rc)
		return b, err == nil
	}
	return sb.buf.Bytes(), !sb.over
}

// checkContract validates one request and its response against the
// document and records the operation and status.
func checkContract(tb testing.TB, sent *http.Request, body *sentBody, status int, header http.Header, respBody []byte) {
	tb.Helper()
	c, err := LoadContract()
	if err != nil {
		tb.Errorf("contract: %v", err)
		return
	}
	reqBody, bodyKnown := body.bytes()
	req := sent.Clone(context.Background())
	req.Body = io.NopCloser(bytes.NewReader(reqBody))
	req.GetBody = nil
	// The server serves a /v1/ path without its trailing slash as if it had
	// one (httpapi.Server.ServeHTTP); the document lists the canonical path.
	if p := req.URL.Path; strings.HasPrefix(p, "/v1/") && !strings.HasSuffix(p, "/") && p != httpapi.OpenAPIPath {
		req.URL.Path += "/"
		if req.URL.RawPath != "" {
			req.URL.RawPath += "/"
		}
	}
	where := fmt.Sprintf("%s %s → %d", sent.Method, sent.URL.RequestURI(), status)

	// The API routes on the escaped path (httpapi/urls.go): an escaped "/"
	// stays inside its segment. So does the document's router; the
	// parameters are then decoded as the API decodes them.
	routed := req.Clone(context.Background())
	routed.URL.Path, routed.URL.RawPath = req.URL.EscapedPath(), ""
	route, params, err := c.router.FindRoute(routed)
	if err != nil {
		recordCoverage("unrouted", status)
		c.checkUnrouted(tb, where, c.pathKnown(routed), status, header, respBody)
		return
	}
	for k, v := range params {
		if u, err := url.PathUnescape(v); err == nil {
			params[k] = u
		}
	}
	recordCoverage(req.Method+" "+route.Path, status)

	if status >= 200 && status < 300 {
		// Only requests the API accepted: tests send invalid ones on purpose.
		var problems []string
		input := &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, ExcludeRequestBody: true, MultiError: true},
		}
		if err := openapi3filter.ValidateRequest(context.Background(), input); err != nil {
			problems = append(problems, err.Error())
		}
		if !bodyKnown {
			tb.Logf("contract: %s: request body too large to validate", where)
		} else if err := c.checkRequestBody(route, req.Header.Get("Content-Type"), reqBody); err != nil {
			problems = append(problems, err.Error())
		}
		if len(problems) > 0 {
			tb.Errorf("contract: %s: the API accepted a request the OpenAPI document does not allow (operation %s %s):\n%s\nrequest body: %.2000s",
				where, req.Method, route.Path, indent(strings.Join(problems, "\n")), reqBody)
		}
	}
	if err := c.checkResponse(route, status, header, respBody); err != nil {
		tb.Errorf("contract: %s: the response does not match the OpenAPI document (operation %s %s):\n%s\nresponse body: %.2000s",
			where, req.Method, route.Path, indent(err.Error()), respBody)
	}
}

// checkRequestBody validates a request body against the operation's.
func (c *Contract) checkRequestBody(route *routers.Route, contentType string, body []byte) error {
	ref := route.Operation.RequestBody
	if ref == nil || ref.Value == nil {
		if len(body) > 0 {
			return errors.New("a body was sent but the operation takes none")
		}
		return nil
	}
	if len(body) == 0 {
		if ref.Value.Required {
			return errors.New("the request body is required")
		}
		return nil
	}
	base := ref.Ref
	if base == "" {
		base = operationPointer(route) + "/requestBody"
	}
	return c.checkContent(base, ref.Value.Content, contentType, body, true)
}

// checkResponse validates the status, the headers and the body of a
// response against the operation's documented responses.
func (c *Contract) checkResponse(route *routers.Route, status int, header http.Header, body []byte) error {
	key := strconv.Itoa(status)
	ref := route.Operation.Responses.Value(key)
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("status %d is not documented for this operation", status)
	}
	base := ref.Ref
	if base == "" {
		base = operationPointer(route) + "/responses/" + pointerEscape(key)
	}
	var problems []string
	names := slices.Sorted(maps.Keys(ref.Value.Headers))
	for _, name := range names {
		if err := c.checkHeader(base+"/headers/"+pointerEscape(name), ref.Value.Headers[name], name, header); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(ref.Value.Content) > 0 {
		if err := c.checkContent(base, ref.Value.Content, header.Get("Content-Type"), body, false); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

func (c *Contract) checkHeader(loc string, ref *openapi3.HeaderRef, name string, header http.Header) error {
	if ref.Ref != "" {
		loc = ref.Ref
	}
	h := ref.Value
	vals := header.Values(name)
	if len(vals) == 0 {
		if h.Required {
			return fmt.Errorf("header %s: required but missing", name)
		}
		return nil
	}
	if h.Schema == nil || h.Schema.Value == nil {
		return nil
	}
	var v any = vals[0]
	if h.Schema.Value.Type.Is(openapi3.TypeInteger) {
		n, err := strconv.ParseInt(vals[0], 10, 64)
		if err != nil {
			return fmt.Errorf("header %s: %q is not an integer", name, vals[0])
		}
		v = n
	}
	if err := c.validate(loc+"/schema", v); err != nil {
		return fmt.Errorf("header %s: %w", name, err)
	}
	return nil
}

// checkContent finds the media type of contentType in content (under the
// document location base) and validates body against its schema.
func (c *Contract) checkContent(base string, content openapi3.Content, contentType string, body []byte, request bool) error {
	media := content.Get(contentType)
	if media == nil {
		return fmt.Errorf("content type %q is not documented (documented: %s)", contentType, strings.Join(slices.Sorted(maps.Keys(content)), ", "))
	}
	if media.Schema == nil {
		return nil
	}
	var key string
	for k, m := range content {
		if m == media {
			key = k
		}
	}
	var v any = string(body)
	if mt, _, _ := mime.ParseMediaType(contentType); mt == "application/json" || strings.HasSuffix(mt, "+json") {
		var err error
		if v, err = jsonschema.UnmarshalJSON(bytes.NewReader(body)); err != nil {
			return fmt.Errorf("body is not JSON: %w", err)
		}
	}
	validate := c.validate
	if request {
		validate = c.validateRequest
	}
	if err := validate(base+"/content/"+pointerEscape(key)+"/schema", v); err != nil {
		return fmt.Errorf("body: %w", err)
	}
	return nil
}

// validate checks v against the schema at loc, a JSON pointer into the
// document. Schemas are compiled once (JSON Schema 2020-12, the dialect of
// OpenAPI 3.1, formats asserted) and reused: kin-openapi compiles them
// again on every validation, which would add minutes to the suite.
func (c *Contract) validate(loc string, v any) error {
	return c.validateWith(c.compiler, c.schemas, loc, v)
}

// validateRequest is validate with the request leniency (lenientRequests).
func (c *Contract) validateRequest(loc string, v any) error {
	return c.validateWith(c.reqCompiler, c.reqSchemas, loc, v)
}

func (c *Contract) validateWith(comp *jsonschema.Compiler, cache map[string]*jsonschema.Schema, loc string, v any) error {
	c.mu.Lock()
	sch, ok := cache[loc]
	if !ok {
		var err error
		if sch, err = comp.Compile(documentURL + loc); err != nil {
			c.mu.Unlock()
			return fmt.Errorf("schema %s does not compile: %w", loc, err)
		}
		cache[loc] = sch
	}
	c.mu.Unlock()
	return sch.Validate(v)
}

const documentURL = "mem:///openapi.json"

func operationPointer(route *routers.Route) string {
	return "#/paths/" + pointerEscape(route.Path) + "/" + strings.ToLower(route.Method)
}

func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// pathKnown reports whether some operation of the document matches req's
// path with another method.
func (c *Contract) pathKnown(req *http.Request) bool {
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if m == req.Method {
			continue
		}
		r := req.Clone(context.Background())
		r.Method = m
		if _, _, err := c.router.FindRoute(r); err == nil {
			return true
		}
	}
	return false
}

// checkUnrouted checks a request the document has no operation for: the API
// must answer it 404 not_found (unknown path) or 405 method_not_allowed
// (known path, other method), in the envelope, with a request ID.
func (c *Contract) checkUnrouted(tb testing.TB, where string, pathKnown bool, status int, header http.Header, respBody []byte) {
	tb.Helper()
	want, response, why := http.StatusNotFound, "NotFound", "no path of the OpenAPI document matches"
	if pathKnown {
		want, response, why = http.StatusMethodNotAllowed, "MethodNotAllowed", "the OpenAPI document has this path only with other methods"
	}
	if status != want {
		tb.Errorf("contract: %s: %s, so %d was expected; document the operation or fix the route.\nresponse body: %.2000s",
			where, why, want, respBody)
		return
	}
	if header.Get("X-Request-ID") == "" {
		tb.Errorf("contract: %s: response without X-Request-ID", where)
	}
	ref := c.Doc.Components.Responses[response]
	if ref == nil || ref.Value == nil {
		tb.Errorf("contract: components.responses.%s is missing from the OpenAPI document", response)
		return
	}
	if err := c.checkContent("#/components/responses/"+response, ref.Value.Content, header.Get("Content-Type"), respBody, false); err != nil {
		tb.Errorf("contract: %s: the response does not match components.responses.%s:\n%s\nresponse body: %.2000s", where, response, indent(err.Error()), respBody)
	}
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n    ")
}
