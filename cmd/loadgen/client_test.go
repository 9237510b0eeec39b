package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestClientRenewsAnExpiredToken: a run longer than the token's life (the
// first 1.5 M bench-scale run stopped following its jobs after an hour)
// gets a new token with the API key and repeats the request once.
func TestClientRenewsAnExpiredToken(t *testing.T) {
	var logins atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == graphqlPath {
			n := logins.Add(1)
			_, _ = w.Write([]byte(`{"data":{"obtainToken":{"token":"t` + string(rune('0'+n)) + `"}}}`))
			return
		}
		if r.Header.Get("Authorization") != "Token t2" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"code":"not_authenticated"}`))
			return
		}
		_, _ = w.Write([]byte(`{"state":"PROCESSING"}`))
	}))
	defer srv.Close()
	c := newClient(srv.URL, 1)
	ctx := context.Background()
	if err := c.login(ctx, "key"); err != nil {
		t.Fatal(err)
	}
	r, err := c.do(ctx, http.MethodGet, "/v1/data-import/jobs/1/", nil)
	if err != nil || r.status != http.StatusOK || !strings.Contains(string(r.body), "PROCESSING") {
		t.Fatalf("after renewal: %v %d %s", err, r.status, r.body)
	}
	if n := logins.Load(); n != 2 {
		t.Fatalf("%d logins, want 2", n)
	}
}
