// Package sdk is the Go client of the data-import API.
//
// The typed operations and models are generated from the API's OpenAPI
// document by oapi-codegen (package client, `make sdk`); this package adds
// what a generator cannot know:
//
//   - authentication: the organisation API key is exchanged for an access
//     token (GraphQL obtainToken), which is renewed with the refresh token
//     when the API answers 401 token_expired or shortly before it expires;
//   - retries of 500/502/503/504 answers and network errors, and waits on
//     429 and 409 idempotency_key_in_use, after Retry-After when the API
//     sends one, else an exponential backoff with jitter (Options);
//   - an Idempotency-Key on every POST, the same on each of its retries, so
//     a retry of a request whose answer was lost gets that answer instead
//     of running it twice (a key set by the caller, e.g. through an
//     operation's IdempotencyKey parameter, is kept);
//   - errors as *APIError, decoded from the API's one error envelope.
//
// New gives a Client whose embedded ClientWithResponses calls any operation
// with all of the above; the methods of this package cover the common flow
// (validate, stage, create, status, notes) with plain results and errors.
package sdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/gridshift/dataimport/sdk/go/client"
)

// Options tune a Client; the zero value is usable.
type Options struct {
	// HTTPClient sends the requests (its Transport and Timeout are used);
	// nil: a pooled client with no overall timeout, sized by Concurrency
	// and bounded by ResponseHeaderTimeout.
	HTTPClient *http.Client
	// Concurrency is how many requests the caller sends at once; the pool
	// keeps that many idle connections to the API (plus two), so parallel
	// workers do not open and close connections. 0: one per CPU. Ignored
	// when HTTPClient is set.
	Concurrency int
	// ResponseHeaderTimeout bounds the wait for the headers of an answer to
	// one try; a try that times out is retried like a network error. 0: no
	// bound (the request's context still applies). Ignored when HTTPClient
	// is set.
	ResponseHeaderTimeout time.Duration
	// RetryMax is how many times a request is retried after a failure (a
	// 500, 502, 503 or 504 answer, or a network error); 0: 8; negative:
	// never.
	RetryMax int
	// WaitMax is how many times a request waits out an answer asking it to
	// come back later (429, or 409 idempotency_key_in_use while its first
	// try still runs) before that answer is returned; 0: RetryMax; negative:
	// no limit, for batch jobs that would rather wait than fail (the
	// request's context and GracefulStop still end the wait).
	WaitMax int
	// RetryWaitMin and RetryWaitMax bound the exponential backoff (with
	// jitter) used when a failed answer has no Retry-After; 0: 250ms and
	// 10s.
	RetryWaitMin, RetryWaitMax time.Duration
	// MaxRetryAfter caps one wait asked by Retry-After; 0: 5 minutes.
	MaxRetryAfter time.Duration
	// GracefulStop, when closed, ends the waits of requests the API has not
	// run (429): they return an error wrapping ErrStopped instead of trying
	// again. Requests sent, and the retries of their failures, go on until
	// their context ends: a batch job closes GracefulStop on its first
	// Ctrl-C (finish what is running, start nothing) and cancels the
	// requests' context on the second.
	GracefulStop <-chan struct{}
	// Logger gets a line per retry (Info for failures, Debug for 429 and
	// idempotency_key_in_use waits) with the method, path, status, wait
	// and request ID; nil: none.
	Logger *slog.Logger
	// OnRetry, when set, is called before each retry or wait with the
	// answer's status (0 for a network error); for counters.
	OnRetry func(status int)
	// Now is the client's clock, read to renew a token before its exp
	// claim; nil: time.Now. Tests set it to show that a client whose clock
	// lags still recovers through the API's 401 token_expired.
	Now func() time.Time
}

// Client is the data-import API with authentication, retries and
// idempotency keys applied to every call.
type Client struct {
	*client.ClientWithResponses
	tokens *tokenSource
}

// New returns a Client for the API at baseURL (e.g. "https://import.example"),
// authenticating with the organisation API key apiKey.
func New(baseURL, apiKey string, opts Options) (*Client, error) {
	if apiKey == "" {
		return nil, errors.New("sdk: an API key is required")
	}
	retrying := newRetryingDoer(opts)
	// Token calls are retried like any other but carry no token themselves.
	tokenAPI, err := client.NewClientWithResponses(baseURL, client.WithHTTPClient(retrying))
	if err != nil {
		return nil, fmt.Errorf("sdk: %w", err)
	}
	ts := &tokenSource{api: tokenAPI, apiKey: apiKey, now: opts.Now}
	api, err := client.NewClientWithResponses(baseURL, client.WithHTTPClient(&authDoer{next: retrying, tokens: ts}))
	if err != nil {
		return nil, fmt.Errorf("sdk: %w", err)
	}
	return &Client{ClientWithResponses: api, tokens: ts}, nil
}

// Token returns a valid access token, obtaining one when needed. When the
// API refuses the API key, this and every call return an error wrapping
// the refusal's *APIError (a 4xx): retrying will not help.
func (c *Client) Token(ctx context.Context) (string, error) {
	tok, _, err := c.tokens.current(ctx)
	return tok, err
}

// graphQLPath is the token endpoint; it takes no token.
const graphQLPath = "/v1/graphql/"

func isGraphQL(r *http.Request) bool {
	return strings.TrimSuffix(r.URL.Path, "/") == strings.TrimSuffix(graphQLPath, "/")
}

// newRetryingDoer is the retrying HTTP layer shared by every call.
func newRetryingDoer(o Options) *retryDoer {
	d := &retryDoer{hc: o.HTTPClient, maxFailures: o.RetryMax, maxWaits: o.WaitMax,
		waitMin: 250 * time.Millisecond, waitMax: 10 * time.Second, maxAfter: 5 * time.Minute,
		stop: o.GracefulStop, log: o.Logger, onRetry: o.OnRetry}
	if d.hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		conns := o.Concurrency
		if conns <= 0 {
			conns = runtime.GOMAXPROCS(0)
		}
		tr.MaxIdleConnsPerHost = conns + 2
		tr.MaxIdleConns = max(tr.MaxIdleConns, conns+2)
		tr.ResponseHeaderTimeout = o.ResponseHeaderTimeout
		d.hc = &http.Client{Transport: tr}
	}
	switch {
	case o.RetryMax == 0:
		d.maxFailures = 8
	case o.RetryMax < 0:
		d.maxFailures = 0
	}
	if o.WaitMax == 0 {
		d.maxWaits = d.maxFailures
	}
	if o.RetryWaitMin > 0 {
		d.waitMin = o.RetryWaitMin
	}
	if o.RetryWaitMax > 0 {
		d.waitMax = o.RetryWaitMax
	}
	if o.MaxRetryAfter > 0 {
		d.maxAfter = o.MaxRetryAfter
	}
	return d
}
