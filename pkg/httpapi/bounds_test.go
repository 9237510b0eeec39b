package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// requestAllocBound bounds the heap one request may allocate (the API and
// this test's client together) for a body of MAX_BODY_BYTES. The worst
// measured by BenchmarkWorstBodies is 52 MB (1,000 notes, stored); before
// array maxima {"customers":[{},{},…]} alone allocated 3.0 GB on validate.
const requestAllocBound = 128 << 20

// Issue 15's reproduction and its siblings, through the router: every POST
// endpoint sent MAX_BODY_BYTES of empty items in each of its top-level
// arrays answers 400 in the envelope, naming the array (max_items), and
// allocates a bounded heap. Not a timing test: allocation is deterministic
// enough to bound with a wide margin.
func TestHugeArraysAreRefusedCheaply(t *testing.T) {
	st := testutil.NewStack(t)
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	limit := int(st.Config.MaxBodyBytes)
	for _, ep := range endpoints {
		for _, bd := range worstBodies(limit)[ep.path] {
			name, ok := strings.CutPrefix(bd.Name, "empty-items:")
			// v2 wraps the account: its attrs are the account's own, as in v1.
			if p, wrapped := strings.CutPrefix(name, "payload."); wrapped {
				name = p
			}
			if !ok || strings.Contains(name, ".") {
				continue
			}
			t.Run(ep.name+"/"+name, func(t *testing.T) {
				body := bd.Make()
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				status, raw := postRead(t, st, ten.Token, ep.path, body)
				runtime.ReadMemStats(&after)
				if alloc := after.TotalAlloc - before.TotalAlloc; alloc > requestAllocBound {
					t.Errorf("%d-byte body allocated %.0f MB, bound %d MB", len(body), float64(alloc)/1e6, requestAllocBound>>20)
				}
				var env struct {
					Detail, Code string
					Errors       []struct{ Attr, Code string }
				}
				if status != http.StatusBadRequest || json.Unmarshal(raw, &env) != nil || env.Detail == "" {
					t.Fatalf("status %d, not the envelope: %.300s", status, raw)
				}
				found := false
				for _, e := range env.Errors {
					found = found || (e.Attr == name && e.Code == "max_items")
				}
				if !found {
					t.Errorf("no max_items on %s: %.500s", name, raw)
				}
				testutil.Tally(testutil.BadInputsTried, 1)
			})
		}
	}
}

func postRead(t *testing.T, st *testutil.Stack, token, path string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, st.Server.URL+path, strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Token "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, raw
}
