// Package sdk is the Go client of the data-import API.
//
// The typed operations and models are generated from the API's OpenAPI
// document by oapi-codegen (package client, `make sdk`); this package adds
// what a generator cannot know:
//
//   - authentication: the organisation API key is exchanged for an access
//     token (GraphQL obtainToken), which is renewed with the refresh token
//     when the API answers 401 token_expired or shortly before it expires;
//   - retries of 429 and 500/502/503/504 answers and network errors,
//     waiting Retry-After when the API sends one (go-retryablehttp);
//   - an Idempotency-Key on every POST, the same on each of its retries, so
//     a retry of a request whose answer was lost gets that answer instead
//     of running it twice;
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
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/gridshift/dataimport/sdk/go/client"
)

// Options tune a Client; the zero value is usable.
type Options struct {
	// HTTPClient sends the requests (its Transport and Timeout are used);
	// nil: a pooled client with no overall timeout.
	HTTPClient *http.Client
	// RetryMax is how many times a request is retried after a retryable
	// answer (429, 500, 502, 503, 504) or a network error; 0: 8; negative:
	// never.
	RetryMax int
	// RetryWaitMin and RetryWaitMax bound the exponential backoff used when
	// the API sends no Retry-After; 0: 250ms and 10s.
	RetryWaitMin, RetryWaitMax time.Duration
	// MaxRetryAfter caps one wait asked by Retry-After; 0: 5 minutes.
	MaxRetryAfter time.Duration
	// Logger gets a line per retry; nil: none.
	Logger *slog.Logger
	// OnRetry, when set, is called before each retry with the answer's
	// status (0 for a network error); for counters.
	OnRetry func(status int)
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
	ts := &tokenSource{api: tokenAPI, apiKey: apiKey}
	api, err := client.NewClientWithResponses(baseURL, client.WithHTTPClient(&authDoer{next: retrying, tokens: ts}))
	if err != nil {
		return nil, fmt.Errorf("sdk: %w", err)
	}
	return &Client{ClientWithResponses: api, tokens: ts}, nil
}

// Token returns a valid access token, obtaining one when needed.
func (c *Client) Token(ctx context.Context) (string, error) {
	tok, _, err := c.tokens.current(ctx)
	return tok, err
}

// graphQLPath is the token endpoint; it takes no token and no
// Idempotency-Key (it is not an idempotent resource).
const graphQLPath = "/v1/graphql/"

func isGraphQL(r *http.Request) bool {
	return strings.TrimSuffix(r.URL.Path, "/") == strings.TrimSuffix(graphQLPath, "/")
}

// newRetryingDoer is the retrying HTTP layer shared by every call.
func newRetryingDoer(o Options) *retryDoer {
	rc := retryablehttp.NewClient()
	if o.HTTPClient != nil {
		rc.HTTPClient = o.HTTPClient
	}
	switch {
	case o.RetryMax == 0:
		rc.RetryMax = 8
	case o.RetryMax < 0:
		rc.RetryMax = 0
	default:
		rc.RetryMax = o.RetryMax
	}
	rc.RetryWaitMin, rc.RetryWaitMax = 250*time.Millisecond, 10*time.Second
	if o.RetryWaitMin > 0 {
		rc.RetryWaitMin = o.RetryWaitMin
	}
	if o.RetryWaitMax > 0 {
		rc.RetryWaitMax = o.RetryWaitMax
	}
	maxAfter := o.MaxRetryAfter
	if maxAfter <= 0 {
		maxAfter = 5 * time.Minute
	}
	rc.Logger = nil
	if o.Logger != nil {
		rc.Logger = o.Logger
	}
	rc.CheckRetry = func(ctx context.Context, resp *http.Response, err error) (bool, error) {
		retry, err := checkRetry(ctx, resp, err)
		if retry && o.OnRetry != nil {
			status := 0
			if resp != nil {
				status = resp.StatusCode
			}
			o.OnRetry(status)
		}
		return retry, err
	}
	rc.Backoff = backoff(maxAfter)
	// The final answer is handed back as it is (an *APIError is made from
	// it by the caller), not replaced by "giving up after N attempts".
	rc.ErrorHandler = retryablehttp.PassthroughErrorHandler
	return &retryDoer{rc: rc}
}
