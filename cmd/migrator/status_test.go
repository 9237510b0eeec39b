package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// A list whose body is cut short is read again: the counts are those of
// the whole list.
func TestStatusRereadsAListCutShort(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const imported = "/v1/data-import/imported-account-import-processes/DEMO_ENERGY/"
	var mu sync.Mutex
	cut := false
	e.proxy.fake = func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path != imported || cut {
			return false
		}
		cut = true
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `[{"external_account_number":"CUT-0000"},`) // and the connection's answer ends
		return true
	}
	out, err := e.run(context.Background(), context.Background(), "status", "DEMO_ENERGY")
	if err != nil || out != "imported 0, pending 0, total 0\n" {
		t.Fatalf("status: %v %q", err, out)
	}
	if n := e.proxy.calls(strings.TrimPrefix(imported, "/v1/data-import"), ""); n != 2 {
		t.Fatalf("the imported list was read %d times, want 2", n)
	}
}
