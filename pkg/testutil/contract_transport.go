package testutil

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
)

// ContractTransport is an http.RoundTripper that checks every request it
// sends and every answer it gets against the OpenAPI document, like
// Stack.Request does: clients under test (the SDKs, the migrator) go
// through it so that what they send and receive is held to the contract.
// next nil means http.DefaultTransport.
func ContractTransport(tb testing.TB, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &contractTransport{tb: tb, next: next}
}

type contractTransport struct {
	tb   testing.TB
	next http.RoundTripper
}

func (t *contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	sent := recordBody(req)
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	checkContract(t.tb, req, sent, resp.StatusCode, resp.Header, raw)
	return resp, nil
}

// ContractProxy is a reverse proxy to target whose every exchange is
// checked by ContractTransport, for clients that run in another process
// (the TypeScript SDK under node). It is closed when the test ends.
func ContractProxy(tb testing.TB, target string) *httptest.Server {
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = ContractTransport(tb, nil)
	srv := httptest.NewServer(rp)
	tb.Cleanup(srv.Close)
	return srv
}
