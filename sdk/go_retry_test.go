package sdk_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
	sdk "github.com/gridshift/dataimport/sdk/go"
)

// flakyFront answers the first POST to path with status and Retry-After
// (the API never sees it), then forwards everything to the real API; it
// records the Idempotency-Key and time of every try of that path.
type flakyFront struct {
	mu    sync.Mutex
	keys  []string
	times []time.Time
}

func newFlakyFront(t *testing.T, target, path string, status int, retryAfter string) (*flakyFront, string) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	f := &flakyFront{}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == path {
			f.mu.Lock()
			f.keys = append(f.keys, r.Header.Get("Idempotency-Key"))
			f.times = append(f.times, time.Now())
			first := len(f.keys) == 1
			f.mu.Unlock()
			if first {
				w.Header().Set("Content-Type", "application/json")
				if retryAfter != "" {
					w.Header().Set("Retry-After", retryAfter)
				}
				w.WriteHeader(status)
				_, _ = w.Write([]byte(`{"detail":"Try again.","code":"service_unavailable"}`))
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return f, srv.URL
}

// 429 and 5xx answers are retried after Retry-After, with the same
// Idempotency-Key on every try of a POST.
func TestGoSDKRetriesHonourRetryAfterWithOneIdempotencyKey(t *testing.T) {
	st, key := newStack(t)
	raw, err := testutil.ReadRepoFile("pkg/dataimport/testdata/account_valid.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		status int
	}{{"429", http.StatusTooManyRequests}, {"503", http.StatusServiceUnavailable}, {"502", http.StatusBadGateway}} {
		t.Run(tc.name, func(t *testing.T) {
			front, base := newFlakyFront(t, st.Server.URL, "/v1/data-import/account-import-process/create-or-update/", tc.status, "1")
			retries := 0
			c, err := sdk.New(base, key, sdk.Options{OnRetry: func(int) { retries++ }})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.StageAccount(context.Background(), json.RawMessage(raw)); err != nil {
				t.Fatalf("stage: %v", err)
			}
			if len(front.keys) != 2 || front.keys[0] == "" || front.keys[0] != front.keys[1] || retries != 1 {
				t.Fatalf("tries carried keys %q (retries %d): want two tries with one key", front.keys, retries)
			}
			if wait := front.times[1].Sub(front.times[0]); wait < time.Second {
				t.Fatalf("retried after %s; Retry-After said 1s", wait)
			}
		})
	}
	t.Run("each request its own key", func(t *testing.T) {
		front, base := newFlakyFront(t, st.Server.URL, "/v1/data-import/validate-account/", http.StatusOK, "")
		c, err := sdk.New(base, key, sdk.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // the first answer is the front's, the second the API's
			_, _ = c.ValidateAccount(context.Background(), json.RawMessage(raw))
		}
		if len(front.keys) < 2 || front.keys[0] == front.keys[1] {
			t.Fatalf("two requests sent keys %q", front.keys)
		}
	})
	t.Run("final answers are not retried", func(t *testing.T) {
		front, base := newFlakyFront(t, st.Server.URL, "/v1/data-import/account-import-process/create-or-update/", http.StatusUnprocessableEntity, "1")
		c, err := sdk.New(base, key, sdk.Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.StageAccount(context.Background(), json.RawMessage(raw))
		if err == nil || len(front.keys) != 1 {
			t.Fatalf("422 gave %v after %d tries", err, len(front.keys))
		}
	})
}
