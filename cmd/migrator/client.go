package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/google/uuid"
)

// errStopped means a graceful stop was asked while a request was waiting
// out a 429: nothing was started for it, so the account can be rerun.
var errStopped = errors.New("stopped while waiting for a free slot")

// errAuth means the API key (or the tokens it gives) is refused: every
// further request would fail the same way.
var errAuth = errors.New("authentication refused")

// maxBody caps what is read of a non-streamed response.
const maxBody = 32 << 20

// maxInUseWait bounds the wait for an earlier try of a request that the API
// says is still running (409 idempotency_key_in_use). The API takes a claim
// over after a few minutes (its lease), so longer means something is wrong.
const maxInUseWait = 10 * time.Minute

// client calls the data-import API with the retry rules of the interface:
// 429 waits Retry-After; 500/502/503/504 and network errors are retried as
// they are with exponential backoff and jitter (bounded); anything else is
// final. Every POST carries an Idempotency-Key made once per request and
// sent again on each of its retries, so that a retry of a request whose
// answer was lost gets that answer instead of running it twice; a 409
// idempotency_key_in_use (the first try still running) waits Retry-After.
// It holds the access token and renews it when it expires.
type client struct {
	base     string
	apiKey   string
	hc       *http.Client
	log      *slog.Logger
	tries    int             // attempts per request for 5xx and network errors
	stopping <-chan struct{} // closed on a graceful stop: 429 waits give up

	mu      sync.Mutex
	token   string
	refresh string
	gen     int // bumped on every new token, so concurrent 401s renew once

	throttled atomic.Int64 // 429 answers seen
	retried   atomic.Int64 // 5xx / network retries
}

func newClient(base, apiKey string, log *slog.Logger, conns int, headerTimeout time.Duration) *client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = conns + 2
	tr.ResponseHeaderTimeout = headerTimeout
	return &client{base: base, apiKey: apiKey, hc: &http.Client{Transport: tr}, log: log, tries: 8}
}

// request is one API call. body is resent as is on every retry.
type request struct {
	method string
	path   string
	body   []byte
	header map[string]string
	noAuth bool // the GraphQL token endpoint
	stream bool // on 2xx hand the open body to the caller
}

// response is a final answer. For streamed 2xx answers Body is nil and the
// caller must close Stream.
type response struct {
	Status    int
	Header    http.Header
	Body      []byte
	Stream    io.ReadCloser
	RequestID string
}

// apiError is the one error envelope (CONTRACT §4) plus the extra fields of
// account_already_imported and of the transactions endpoint (interface 4.2).
type apiError struct {
	Detail                string       `json:"detail"`
	Code                  string       `json:"code"`
	Errors                []fieldError `json:"errors"`
	ExternalAccountNumber string       `json:"external_account_number"`
	PlatformAccountNumber string       `json:"platform_account_number"`
	Status                string       `json:"status"`
	ErrorDetail           string       `json:"error_detail"`
	TransactionData       struct {
		TransactionID string `json:"transaction_id"`
	} `json:"transaction_data"`
}

type fieldError struct {
	Detail string `json:"detail"`
	Code   string `json:"code"`
	Attr   string `json:"attr"`
}

// apiErr decodes an error body; a body that is not the envelope still gives
// a code (http_<status>) and its text as detail.
func (r *response) apiErr() apiError {
	var e apiError
	if err := json.Unmarshal(r.Body, &e); err != nil || (e.Code == "" && e.Status == "") {
		e.Code = "http_" + strconv.Itoa(r.Status)
		if e.Detail == "" {
			e.Detail = truncate(string(bytes.TrimSpace(r.Body)), 300)
		}
	}
	if e.Code == "" {
		e.Code = e.Status // TRANSACTION_IMPORT_ERROR
	}
	if e.Detail == "" {
		e.Detail = e.ErrorDetail
	}
	return e
}

func retryable(status int) bool {
	switch status {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// newBackOff is the policy for 5xx and network errors: 250ms doubling to 10s,
// ±50% jitter, at most c.tries attempts in all.
func (c *client) newBackOff(ctx context.Context) backoff.BackOff {
	exp := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(250*time.Millisecond),
		backoff.WithMultiplier(2),
		backoff.WithRandomizationFactor(0.5),
		backoff.WithMaxInterval(10*time.Second),
		backoff.WithMaxElapsedTime(0),
	)
	return backoff.WithContext(backoff.WithMaxRetries(exp, uint64(max(c.tries-1, 0))), ctx)
}

// do sends req until it has a final answer. It returns an error only when no
// answer could be had (network errors after every try, cancellation, a
// graceful stop during a 429 wait, or a refused API key).
func (c *client) do(ctx context.Context, req request) (*response, error) {
	bo := c.newBackOff(ctx)
	renewals := 0
	var key string
	if req.method == http.MethodPost {
		key = uuid.NewString() // one per request, the same on all its retries
	}
	var inUseSince time.Time
	for {
		var token string
		var gen int
		if !req.noAuth {
			var err error
			if token, gen, err = c.currentToken(ctx); err != nil {
				return nil, err
			}
		}
		resp, err := c.once(ctx, req, token, key)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%s %s: %w", req.method, req.path, context.Cause(ctx))
			}
			wait := bo.NextBackOff()
			if wait == backoff.Stop {
				return nil, fmt.Errorf("%s %s: giving up after %d tries: %w", req.method, req.path, c.tries, err)
			}
			c.retried.Add(1)
			c.log.InfoContext(ctx, "network error, retrying", "path", req.path, "wait", wait, "err", err)
			if err := sleep(ctx, nil, wait); err != nil {
				return nil, err
			}
			continue
		}
		switch {
		case resp.Status == http.StatusUnauthorized && !req.noAuth && resp.apiErr().Code == "token_expired" && renewals < 3:
			renewals++
			if err := c.renew(ctx, gen); err != nil {
				return nil, err
			}
			continue
		case resp.Status == http.StatusTooManyRequests:
			c.throttled.Add(1)
			wait := retryAfter(resp.Header, time.Second)
			wait += rand.N(wait/5 + 250*time.Millisecond) // spread the herd of waiting workers
			c.log.DebugContext(ctx, "429, waiting Retry-After", "path", req.path, "code", resp.apiErr().Code, "wait", wait)
			if err := sleep(ctx, c.stopping, wait); err != nil {
				return nil, err
			}
			continue
		case resp.Status == http.StatusConflict && resp.apiErr().Code == "idempotency_key_in_use" &&
			(inUseSince.IsZero() || time.Since(inUseSince) < maxInUseWait):
			// Our earlier try is still running server-side (its answer was
			// lost): wait for it and get its answer. A graceful stop still
			// waits, as the request was started.
			if inUseSince.IsZero() {
				inUseSince = time.Now()
			}
			wait := retryAfter(resp.Header, time.Second)
			c.log.DebugContext(ctx, "idempotency key in use, waiting for the first try", "path", req.path, "wait", wait)
			if err := sleep(ctx, nil, wait); err != nil {
				return nil, err
			}
			continue
		case retryable(resp.Status):
			wait := bo.NextBackOff()
			if wait == backoff.Stop {
				c.log.WarnContext(ctx, "server error, giving up", "path", req.path, "status", resp.Status, "request_id", resp.RequestID)
				return resp, nil
			}
			if ra := retryAfter(resp.Header, 0); ra > wait {
				wait = ra
			}
			c.retried.Add(1)
			c.log.InfoContext(ctx, "server error, retrying", "path", req.path, "status", resp.Status, "wait", wait, "request_id", resp.RequestID)
			if err := sleep(ctx, nil, wait); err != nil {
				return nil, err
			}
			continue
		}
		return resp, nil
	}
}

// once sends one attempt. A body cut short is a network error (retried).
func (c *client) once(ctx context.Context, req request, token, idempotencyKey string) (*response, error) {
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, c.base+req.path, body)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	if req.body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", "gridshift-migrator/1")
	if token != "" {
		hr.Header.Set("Authorization", "Token "+token)
	}
	if idempotencyKey != "" {
		hr.Header.Set("Idempotency-Key", idempotencyKey)
	}
	for k, v := range req.header {
		hr.Header.Set(k, v)
	}
	hresp, err := c.hc.Do(hr)
	if err != nil {
		return nil, err
	}
	resp := &response{Status: hresp.StatusCode, Header: hresp.Header, RequestID: hresp.Header.Get("X-Request-ID")}
	if req.stream && hresp.StatusCode/100 == 2 {
		resp.Stream = hresp.Body
		return resp, nil
	}
	defer hresp.Body.Close()
	if resp.Body, err = io.ReadAll(io.LimitReader(hresp.Body, maxBody)); err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	return resp, nil
}

// retryAfter reads Retry-After (seconds or an HTTP date); def when absent.
func retryAfter(h http.Header, def time.Duration) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return def
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return min(time.Duration(n)*time.Second, 10*time.Minute)
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(time.Until(t), 0), 10*time.Minute)
	}
	return def
}

// sleep waits d, or returns early when ctx ends or stop closes.
func sleep(ctx context.Context, stop <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-stop:
		return errStopped
	}
}

// ---- tokens (CONTRACT §3) ----

const (
	obtainWithKey     = `mutation($v: String!) { obtainToken(input: {APIKey: $v}) { token refreshToken } }`
	obtainWithRefresh = `mutation($v: String!) { obtainToken(input: {refreshToken: $v}) { token refreshToken } }`
)

// currentToken returns the access token, obtaining one on first use.
func (c *client) currentToken(ctx context.Context) (string, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token == "" {
		if err := c.obtainLocked(ctx, false); err != nil {
			return "", 0, err
		}
	}
	return c.token, c.gen, nil
}

// renew replaces an expired token, unless another request already did
// (gen moved on). It uses the refresh token and falls back to the API key.
func (c *client) renew(ctx context.Context, gen int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return nil
	}
	if c.refresh != "" {
		err := c.obtainLocked(ctx, true)
		if err == nil {
			c.log.DebugContext(ctx, "access token refreshed")
			return nil
		}
		c.log.InfoContext(ctx, "refresh token refused, using the API key again", "err", err)
	}
	return c.obtainLocked(ctx, false)
}

func (c *client) obtainLocked(ctx context.Context, useRefresh bool) error {
	query, v := obtainWithKey, c.apiKey
	if useRefresh {
		query, v = obtainWithRefresh, c.refresh
	}
	body, err := json.Marshal(map[string]any{"query": query, "variables": map[string]string{"v": v}})
	if err != nil {
		return fmt.Errorf("encode obtainToken: %w", err)
	}
	resp, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/graphql/", body: body, noAuth: true})
	if err != nil {
		return fmt.Errorf("obtain token: %w", err)
	}
	if resp.Status != http.StatusOK {
		e := resp.apiErr()
		err := fmt.Errorf("obtain token: HTTP %d %s: %s", resp.Status, e.Code, e.Detail)
		if resp.Status/100 == 4 {
			err = fmt.Errorf("%w: %w", err, errAuth)
		}
		return err
	}
	var out struct {
		Data *struct {
			ObtainToken *struct {
				Token        string `json:"token"`
				RefreshToken string `json:"refreshToken"`
			} `json:"obtainToken"`
		} `json:"data"`
		Errors []struct {
			Message    string `json:"message"`
			Extensions struct {
				ErrorCode string `json:"errorCode"`
			} `json:"extensions"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		return fmt.Errorf("decode obtainToken answer: %w", err)
	}
	if len(out.Errors) > 0 {
		e := out.Errors[0]
		return fmt.Errorf("obtain token: %s (%s): %w", e.Message, e.Extensions.ErrorCode, errAuth)
	}
	if out.Data == nil || out.Data.ObtainToken == nil || out.Data.ObtainToken.Token == "" {
		return fmt.Errorf("obtain token: no token in %q: %w", truncate(string(resp.Body), 200), errAuth)
	}
	c.token, c.refresh = out.Data.ObtainToken.Token, out.Data.ObtainToken.RefreshToken
	c.gen++
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
