package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/auth"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// fuzzAPIKey is the one valid key of FuzzObtainToken's stack. It is fixed
// (not generated) so that the checked-in corpus and every fuzz worker
// process, each with its own stack, agree on it; it exists only in the
// target's private, dropped database.
const (
	fuzzKeyPrefix = "dik_5eedf022"
	fuzzAPIKey    = fuzzKeyPrefix + "_0b7c6a1e9d2f4e3b8a5c7d9e1f2a3b4c5d6e7f80"
)

// jwtShape matches an issued access or refresh token wherever an alias puts
// it in the response's data.
var jwtShape = regexp.MustCompile(`^eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$`)

// FuzzObtainToken sends arbitrary bodies to POST /v1/graphql/ through the
// real router, Postgres and Redis. Properties: never a 5xx; the answer is
// JSON; a token is issued only to a body that carries the real API key
// (literally, or spelled with JSON / GraphQL string escapes).
//
// The stack trusts 127.0.0.1 as a proxy and every input comes from its own
// X-Forwarded-For address, so the login throttle (10 failures a minute per
// client) never turns the rest of the run into 429s.
func FuzzObtainToken(f *testing.F) {
	st := testutil.NewStack(f, func(c *testutilConfig) { c.TrustedProxies = []string{"127.0.0.1"} })
	st.Supplier("ACME")
	ctx := context.Background()
	if _, err := st.DB.CreateOrganisation(ctx, "Fuzz Partner"); err != nil {
		f.Fatal(err)
	}
	if err := st.DB.CreateAPIKey(ctx, postgres.NewAPIKey{Organisation: "Fuzz Partner", Suppliers: []string{"ACME"},
		Prefix: fuzzKeyPrefix, Hash: auth.HashAPIKey(fuzzAPIKey)}); err != nil {
		f.Fatal(err)
	}
	query := func(q string, vars map[string]any) []byte {
		b, err := json.Marshal(map[string]any{"query": q, "variables": vars})
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	valid := query(`mutation { obtainToken(input: {APIKey: "`+fuzzAPIKey+`"}) { token refreshToken refreshExpiresIn } }`, nil)
	client := &http.Client{Timeout: 30 * time.Second}
	var n atomic.Uint32
	// post sends one body as its own client (see above).
	post := func(body []byte) (status int, contentType string, raw []byte, err error) {
		i := n.Add(1)
		req, err := http.NewRequest(http.MethodPost, st.Server.URL+"/v1/graphql/", bytes.NewReader(body))
		if err != nil {
			return 0, "", nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", byte(i>>16), byte(i>>8), byte(i)))
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", nil, err
		}
		defer resp.Body.Close()
		raw, err = io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), raw, err
	}
	// The detector below must see the token the valid seed gets.
	if status, _, raw, err := post(valid); err != nil || !strings.Contains(string(raw), `"token":"eyJ`) || findToken(decodeObject(raw)["data"]) == "" {
		f.Fatalf("the valid key got no token (detector broken?): %d %s %v", status, raw, err)
	}
	f.Add(valid)
	f.Add(query(obtainByKey, map[string]any{"k": fuzzAPIKey[:len(fuzzAPIKey)-1] + "1"}))
	f.Add(query(`mutation($r: String!) { obtainToken(input: {refreshToken: $r}) { token } }`, map[string]any{"r": "eyJhbGciOiJIUzI1NiJ9.e30.x"}))

	f.Fuzz(func(t *testing.T, body []byte) {
		status, ct, raw, err := post(body)
		if err != nil {
			t.Fatal(err)
		}
		if status >= 500 {
			t.Fatalf("status %d for %q: %s", status, body, raw)
		}
		out := decodeObject(raw) // {"data", "errors"} or the error envelope
		if !strings.HasPrefix(ct, "application/json") || out == nil {
			t.Fatalf("status %d, Content-Type %q, not a JSON object: %q", status, ct, raw)
		}
		if tok := findToken(out["data"]); tok != "" && !mentionsKey(body, fuzzAPIKey) {
			t.Fatalf("token issued to a body without the API key: %q\nresponse %s", body, raw)
		}
	})
}

// decodeObject returns raw as a JSON object, or nil when it is not one.
func decodeObject(raw []byte) map[string]any {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// findToken returns the first token-shaped string in v.
func findToken(v any) string {
	switch x := v.(type) {
	case string:
		if jwtShape.MatchString(x) {
			return x
		}
	case map[string]any:
		for _, e := range x {
			if s := findToken(e); s != "" {
				return s
			}
		}
	case []any:
		for _, e := range x {
			if s := findToken(e); s != "" {
				return s
			}
		}
	}
	return ""
}

// mentionsKey reports whether body carries key: literally, or in any JSON
// string of it (keys and values, so the query and every variable) once its
// JSON and GraphQL string escapes are undone.
func mentionsKey(body []byte, key string) bool {
	if bytes.Contains(body, []byte(key)) {
		return true
	}
	var v any
	if json.Unmarshal(body, &v) != nil {
		return false
	}
	var found bool
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			found = found || strings.Contains(x, key) || strings.Contains(unescapeGraphQL(x), key)
		case map[string]any:
			for k, e := range x {
				walk(k)
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return found
}

// unescapeGraphQL undoes GraphQL string escapes (\uXXXX, \n, \", …)
// throughout s; outside string literals that yields text the parser would
// refuse anyway, so it can only over-approximate what a literal spells.
func unescapeGraphQL(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch c := s[i+1]; c {
		case 'u':
			if i+6 <= len(s) {
				if r, err := strconv.ParseUint(s[i+2:i+6], 16, 32); err == nil {
					b.WriteRune(rune(r))
					i += 5
					continue
				}
			}
			b.WriteByte(s[i])
		case '"', '\\', '/':
			b.WriteByte(c)
			i++
		case 'b', 'f', 'n', 'r', 't':
			b.WriteByte(map[byte]byte{'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}[c])
			i++
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}
