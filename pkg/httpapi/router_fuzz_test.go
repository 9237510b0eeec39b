package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// FuzzRouter sends authenticated requests with arbitrary paths and query
// strings through the real router, Postgres and Redis. Properties: never a
// 5xx, and every error answer is the JSON envelope (a non-empty detail and
// code, field errors complete). Paths and queries are sent as the fuzzer
// wrote them, %-escapes included (so %00 and %FF reach the router); only
// bytes that cannot appear in a request line are escaped.
func FuzzRouter(f *testing.F) {
	st := testutil.NewStack(f)
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Fuzz Partner", "DEMO_ENERGY")
	if r := st.As(ten.Token, http.MethodPost, stagePath, accountB(f, "EXT-1")); r.Status != http.StatusCreated {
		f.Fatalf("stage: %d %s", r.Status, r.Body)
	}
	for _, seed := range []struct {
		method byte
		path   string
		query  string
	}{
		{0, "/v1/data-import/account-transfer-status/DEMO_ENERGY/EXT-1/", ""},
		{0, "/v1/data-import/account-transfer-status/DEMO%00/EXT-1/", ""},
		{0, "/v1/data-import/account-transfer-status/DEMO%FF/EXT-1/", ""},
		{0, "/v1/data-import/account-transfer-status/DEMO_ENERGY/EXT%00/", ""},
		{0, "/v1/data-import/account-transfer-status/DEMO_ENERGY/EXT%FF/", ""},
		{0, "/v1/data-import/all-account-import-processes/DEMO_ENERGY/", "page_size=5&cursor=AA"},
		{0, "/v1/data-import/pending-account-import-processes/DEMO_ENERGY/", "page_size=5&cursor=_w"},
		{0, "/v1/data-import/imported-account-import-processes/%00/", ""},
		{0, "/v1/data-import/all-account-import-processes/DEMO_ENERGY/", "page_size=%00&x%FF=1&cursor=%zz"},
		{1, "/v1/data-import/transactions/create/", "check_previously_added=%00&force_add_to_current_statement=maybe"},
		{1, "/v1/data-import/validate-account/", "x=" + strings.Repeat("y", 2000)},
		{2, "/v1/data-import/notes/create/", ""},
		{0, "/v2/data-import/accounts/DEMO_ENERGY/EXT%00/", ""},
		{0, "/v2/data-import/accounts/DEMO%FF/EXT-1/events/", ""},
		{1, "/v2/data-import/accounts/DEMO_ENERGY/EXT-1/cancel/", "x=%00"},
		{1, "/v2/data-import/accounts/", ""},
		{0, "/v1/data-import/events/", "after=%FF&wait=99h&limit=-1&type=%00"},
		{0, "/docs/%00", ""},
		{0, "/v1/data-import/openapi.json", "a;b"},
	} {
		f.Add(seed.method, seed.path, seed.query)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	methods := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete}
	f.Fuzz(func(t *testing.T, method byte, path, query string) {
		m := methods[int(method)%len(methods)]
		target := st.Server.URL + "/" + requestLineSafe(strings.TrimPrefix(path, "/"), false)
		if query != "" {
			target += "?" + requestLineSafe(query, true)
		}
		var body io.Reader
		if m != http.MethodGet {
			body = strings.NewReader(`{}`)
		}
		req, err := http.NewRequest(m, target, body)
		if err != nil {
			return // not a URL at all (a bad %-escape in the path): no request to send
		}
		req.Header.Set("Authorization", "Token "+ten.Token)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", m, target, err)
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s %s: %v", m, target, err)
		}
		if resp.StatusCode >= 500 {
			t.Fatalf("%s %s: status %d: %s", m, target, resp.StatusCode, raw)
		}
		if resp.StatusCode >= 400 {
			if msg := envelopeProblem(resp.Header.Get("Content-Type"), raw); msg != "" {
				t.Fatalf("%s %s: status %d, %s: %q", m, target, resp.StatusCode, msg, raw)
			}
		}
	})
}

// requestLineSafe %-escapes the bytes that cannot appear in a request
// line (controls, space, non-ASCII, '#', and '?' in a path) and keeps the
// rest, existing %-escapes included.
func requestLineSafe(s string, query bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || c == '#' || c == '"' || c == '<' || c == '>' || c == '\\' || c == '^' || c == '`' ||
			c == '{' || c == '|' || c == '}' || (!query && c == '?') {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// envelopeProblem says what is wrong with an error answer, or "" when it
// is the envelope: {"detail", "code", "errors"?: [{"detail","code","attr"}]}.
func envelopeProblem(contentType string, raw []byte) string {
	if !strings.HasPrefix(contentType, "application/json") {
		return "Content-Type " + contentType
	}
	var env struct {
		Detail *string `json:"detail"`
		Code   *string `json:"code"`
		Errors []struct {
			Detail, Code, Attr string
		} `json:"errors"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return "not JSON: " + err.Error()
	}
	if env.Detail == nil || *env.Detail == "" || env.Code == nil || *env.Code == "" {
		return "no detail or code"
	}
	for _, e := range env.Errors {
		if e.Detail == "" || e.Code == "" || e.Attr == "" {
			return "incomplete field error"
		}
	}
	return ""
}
