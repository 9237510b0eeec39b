package sdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
	sdk "github.com/gridshift/dataimport/sdk/go"
)

// front sits before the real API: answer may answer a request itself (try
// counts the requests to that method and path so far, from 1); everything
// else is forwarded. It counts the connections clients open to it.
type front struct {
	URL   string
	mu    sync.Mutex
	tries map[string]int
	conns atomic.Int64
}

func newFront(t *testing.T, target string, answer func(w http.ResponseWriter, r *http.Request, try int) bool) *front {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	f := &front{tries: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.tries[r.Method+" "+r.URL.Path]++
		try := f.tries[r.Method+" "+r.URL.Path]
		f.mu.Unlock()
		if answer == nil || !answer(w, r, try) {
			rp.ServeHTTP(w, r)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			f.conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

func (f *front) triesOf(method, path string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tries[method+" "+path]
}

const stagePath = "/v1/data-import/account-import-process/create-or-update/"

func sampleAccount(t *testing.T) json.RawMessage {
	t.Helper()
	raw, err := testutil.ReadRepoFile("pkg/dataimport/testdata/account_valid.json")
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func throttle(w http.ResponseWriter, retryAfter string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", retryAfter)
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = io.WriteString(w, `{"detail":"Too many accounts are being created.","code":"concurrency_limit_reached"}`)
}

// WaitMax bounds the 429s a request waits out apart from RetryMax: by
// default a request gives up after RetryMax of them; with WaitMax -1 it
// waits them all out (logging each); GracefulStop ends such a wait at once
// with ErrStopped, without a further try.
func TestGoSDKWaitsOut429sUntilGracefulStop(t *testing.T) {
	st, key := newStack(t)
	ctx := context.Background()
	const throttled = 12 // more than RetryMax's default 8
	throttling := func() *front {
		return newFront(t, st.Server.URL, func(w http.ResponseWriter, r *http.Request, try int) bool {
			if r.URL.Path == stagePath && try <= throttled {
				throttle(w, "0")
				return true
			}
			return false
		})
	}

	f := throttling()
	c, err := sdk.New(f.URL, key, sdk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var apiErr *sdk.APIError
	if _, err := c.StageAccount(ctx, sampleAccount(t)); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("default options: %v, want the 429 after RetryMax waits", err)
	}
	if n := f.triesOf(http.MethodPost, stagePath); n != 9 {
		t.Fatalf("default options: %d tries, want 9 (one and 8 retries)", n)
	}

	f = throttling()
	var logs bytes.Buffer
	waits := 0
	c, err = sdk.New(f.URL, key, sdk.Options{WaitMax: -1, OnRetry: func(status int) {
		if status == http.StatusTooManyRequests {
			waits++
		}
	}, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.StageAccount(ctx, sampleAccount(t)); err != nil {
		t.Fatalf("WaitMax -1: %v", err)
	}
	if n := f.triesOf(http.MethodPost, stagePath); n != throttled+1 || waits != throttled {
		t.Fatalf("WaitMax -1: %d tries, %d waits, want %d and %d", n, waits, throttled+1, throttled)
	}
	if got := strings.Count(logs.String(), `msg="429, waiting Retry-After" method=POST path=`+stagePath); got != throttled {
		t.Fatalf("%d log lines for %d waits:\n%s", got, throttled, logs.String())
	}

	stop := make(chan struct{})
	always := newFront(t, st.Server.URL, func(w http.ResponseWriter, r *http.Request, _ int) bool {
		if r.URL.Path == stagePath {
			throttle(w, "30")
			return true
		}
		return false
	})
	c, err = sdk.New(always.URL, key, sdk.Options{WaitMax: -1, GracefulStop: stop})
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(300*time.Millisecond, func() { close(stop) })
	began := time.Now()
	bounded, cancel := context.WithTimeout(ctx, 10*time.Second) // without the stop, the wait is endless
	defer cancel()
	_, err = c.StageAccount(bounded, sampleAccount(t))
	if !errors.Is(err, sdk.ErrStopped) || time.Since(began) > 5*time.Second {
		t.Fatalf("graceful stop during a 429 wait: %v after %s, want ErrStopped at once", err, time.Since(began))
	}
	if n := always.triesOf(http.MethodPost, stagePath); n != 1 {
		t.Fatalf("%d tries, want 1: nothing is sent after a graceful stop", n)
	}
}

// ResponseHeaderTimeout ends a try whose answer does not come, and the
// request is retried.
func TestGoSDKResponseHeaderTimeoutRetries(t *testing.T) {
	st, key := newStack(t)
	const path = "/v1/data-import/account-transfer-status/DEMO_ENERGY/EXT-0001/"
	f := newFront(t, st.Server.URL, func(_ http.ResponseWriter, r *http.Request, try int) bool {
		if r.URL.Path == path && try == 1 {
			select { // a server that hangs: the answer comes too late
			case <-time.After(3 * time.Second):
			case <-r.Context().Done():
			}
		}
		return false
	})
	c, err := sdk.New(f.URL, key, sdk.Options{ResponseHeaderTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var apiErr *sdk.APIError
	if _, err := c.Status(context.Background(), "DEMO_ENERGY", "EXT-0001"); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Fatalf("status: %v, want the API's 404", err)
	}
	if n := f.triesOf(http.MethodGet, path); n != 2 {
		t.Fatalf("%d tries, want 2: the first one timed out and was retried", n)
	}
}

// Concurrency sizes the pool: parallel workers reuse their connections
// instead of opening new ones for every round of requests.
func TestGoSDKConcurrencyKeepsConnections(t *testing.T) {
	st, key := newStack(t)
	f := newFront(t, st.Server.URL, nil)
	const workers = 8
	c, err := sdk.New(f.URL, key, sdk.Options{Concurrency: workers})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := c.Token(ctx); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				var apiErr *sdk.APIError
				if _, err := c.Status(ctx, "DEMO_ENERGY", "EXT-0001"); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
					t.Errorf("status: %v", err)
				}
			})
		}
		wg.Wait()
	}
	// The token's connection, then at most one per worker.
	if n := f.conns.Load(); n > workers+1 {
		t.Fatalf("%d connections opened for %d workers: the pool does not keep them", n, workers)
	}
}

// A request whose token expires more than once (it waited out 429s longer
// than a token lives) is renewed each time, not handed back as a 401.
func TestGoSDKRenewsTheTokenMoreThanOncePerRequest(t *testing.T) {
	st, key := newStack(t)
	f := newFront(t, st.Server.URL, func(w http.ResponseWriter, r *http.Request, try int) bool {
		if r.URL.Path == stagePath && try <= 2 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"detail":"The access token has expired; obtain a new one.","code":"token_expired"}`)
			return true
		}
		return false
	})
	c, err := sdk.New(f.URL, key, sdk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.StageAccount(context.Background(), sampleAccount(t)); err != nil {
		t.Fatalf("stage: %v", err)
	}
	if n := f.triesOf(http.MethodPost, "/v1/graphql/"); n != 3 {
		t.Fatalf("%d obtainToken calls, want 3: the first token and two renewals", n)
	}
}

// Errors decode from the envelope, from the transactions endpoint's own
// shape, and give the fields some errors add through Decode.
func TestAPIErrorShapes(t *testing.T) {
	answer := func(status int, body string) *sdk.APIError {
		resp := &http.Response{StatusCode: status, Header: http.Header{"X-Request-Id": {"req-1"}}}
		return sdk.NewAPIError(resp, []byte(body))
	}
	e := answer(400, `{"detail":"Invalid.","code":"invalid_payload","errors":[{"detail":"Bad.","code":"invalid_phone_number","attr":"customers.0.mobile"}]}`)
	if e.Code != "invalid_payload" || len(e.Errors) != 1 || e.Errors[0].Attr != "customers.0.mobile" || e.RequestID != "req-1" {
		t.Fatalf("envelope: %+v", e)
	}
	e = answer(400, `{"status":"TRANSACTION_IMPORT_ERROR","error_detail":"Not within the open statement period.","transaction_data":{"transaction_id":"T2"}}`)
	if e.Code != "TRANSACTION_IMPORT_ERROR" || e.Detail != "Not within the open statement period." {
		t.Fatalf("transactions error: %+v", e)
	}
	e = answer(400, `{"detail":"Already imported.","code":"account_already_imported","external_account_number":"EXT-0001","platform_account_number":"A-1F2E3D4C"}`)
	var extra struct {
		PlatformAccountNumber string `json:"platform_account_number"`
	}
	if err := e.Decode(&extra); err != nil || extra.PlatformAccountNumber != "A-1F2E3D4C" {
		t.Fatalf("decode: %v %+v", err, extra)
	}
	e = answer(502, `<html>Bad gateway</html>`)
	if e.Code != "http_502" || e.Detail != "<html>Bad gateway</html>" {
		t.Fatalf("not the envelope: %+v", e)
	}
}
