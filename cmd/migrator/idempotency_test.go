package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestPushRetriesReuseIdempotencyKeys: every POST carries an Idempotency-Key,
// the same on each retry of one request and another for every other
// request. The proxy loses the first answer of every staging and create (the
// API ran them, the CLI gets a 502) and answers the first validation 409
// idempotency_key_in_use; the retries carry the same key, so the API replays
// instead of staging or creating twice.
func TestPushRetriesReuseIdempotencyKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	type call struct{ path, external string }
	var mu sync.Mutex
	calls := map[string][]call{} // key → the requests that carried it
	unkeyed := []string{}
	tried := map[call]bool{}
	e.proxy.fake = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if r.Method != http.MethodPost {
			return false
		}
		var id struct {
			External string `json:"external_account_number"`
		}
		_ = json.Unmarshal(body, &id)
		key := r.Header.Get("Idempotency-Key")
		c := call{r.URL.Path, id.External}
		mu.Lock()
		if key == "" {
			unkeyed = append(unkeyed, r.URL.Path)
		}
		calls[key] = append(calls[key], c)
		first := !tried[c] // by request, not by key: a client that changes keys still gets through
		tried[c] = true
		mu.Unlock()
		switch {
		case !first || !strings.HasPrefix(r.URL.Path, apiPrefix+"/"):
			return false
		case strings.HasSuffix(r.URL.Path, "/validate-account/"):
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"detail":"A request with this Idempotency-Key is still running.","code":"idempotency_key_in_use"}`)
			return true
		}
		// The API runs the request; its answer is lost on the way back.
		fwd, err := http.NewRequestWithContext(r.Context(), r.Method, e.st.Server.URL+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			t.Error(err)
			return false
		}
		fwd.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(fwd)
		if err != nil {
			t.Error(err)
			return false
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		w.WriteHeader(http.StatusBadGateway)
		return true
	}

	const n = 3
	file := e.writeFile("accounts.ndjson", validLines(t, "IDEM", n))
	report := filepath.Join(e.dir, "report.csv")
	if out, err := e.push(file, report, "--parallel", "3"); err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	for _, r := range readReport(t, report) {
		if r.Outcome != outcomeCompleted || r.Detail != "" {
			t.Fatalf("row %+v: want created, not found already imported", r)
		}
	}
	e.checkAllImported(n)
	// Each staging ran once: the retry of the lost one was replayed.
	if v := e.count(`SELECT count(*) FROM import_process_versions`); v != n {
		t.Fatalf("%d staged versions for %d accounts: a retry staged again", v, n)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(unkeyed) > 0 {
		t.Fatalf("POSTs without an Idempotency-Key: %v", unkeyed)
	}
	perRequest := map[call]int{} // data-import request → distinct keys it used
	for key, cs := range calls {
		if !strings.HasPrefix(cs[0].path, apiPrefix+"/") {
			continue // obtainToken: nothing was lost, no retry
		}
		if len(cs) != 2 {
			t.Errorf("key %s sent %d times (%v), want twice: the lost try and its retry", key, len(cs), cs)
		}
		for _, c := range cs[1:] {
			if c != cs[0] {
				t.Errorf("key %s used for two requests: %v and %v", key, cs[0], c)
			}
		}
		perRequest[cs[0]]++
	}
	if len(perRequest) != 3*n {
		t.Errorf("%d distinct requests keyed, want %d (validate, stage, create per account): %v", len(perRequest), 3*n, perRequest)
	}
	for c, keys := range perRequest {
		if keys != 1 {
			t.Errorf("%v used %d keys, want one for all its tries", c, keys)
		}
	}
}
