package sdk

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/google/uuid"
)

// IdempotencyKeyHeader makes a POST safe to retry (the API stores the first
// complete answer per key and replays it).
const IdempotencyKeyHeader = "Idempotency-Key"

// ErrStopped is returned by a request that was waiting out a 429 when
// Options.GracefulStop closed: the API never ran it, so it can simply be
// sent again later.
var ErrStopped = errors.New("sdk: stopped while waiting out a 429 (the request was not run)")

// retryDoer sends a request until it has a final answer:
//
//   - 500, 502, 503, 504 and network errors are failures: retried at most
//     maxFailures times, after Retry-After when the answer has one, else
//     after an exponential backoff with jitter;
//   - 429, and 409 idempotency_key_in_use (the first try of the same
//     request is still running), ask the caller to come back after
//     Retry-After: waited out at most maxWaits times (negative: no limit);
//     a 429 wait ends with ErrStopped when stop closes;
//   - anything else is final.
//
// Every POST carries an Idempotency-Key made before its first try, so each
// retry of it carries the same one.
type retryDoer struct {
	hc          *http.Client
	maxFailures int
	maxWaits    int // negative: no limit
	waitMin     time.Duration
	waitMax     time.Duration
	maxAfter    time.Duration
	stop        <-chan struct{}
	log         *slog.Logger
	onRetry     func(status int)
}

func (d *retryDoer) Do(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.Header.Get(IdempotencyKeyHeader) == "" {
		// One key per request, made before the first try, so every retry
		// of it carries the same one. The token endpoint ignores it.
		req.Header.Set(IdempotencyKeyHeader, uuid.NewString())
	}
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		// A body that cannot be replayed is read once, so it can be.
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("sdk: read request body: %w", err)
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	}
	ctx := req.Context()
	failures, waits := 0, 0
	bo := d.newBackOff() // this request's failure delays
	for {
		try := req.Clone(ctx)
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, fmt.Errorf("sdk: %w", err)
			}
			try.Body = body
		}
		resp, err := d.hc.Do(try)
		if ctx.Err() != nil {
			if resp != nil {
				_ = resp.Body.Close()
			}
			return nil, fmt.Errorf("sdk: %s %s: %w", req.Method, req.URL.Path, context.Cause(ctx))
		}
		var wait time.Duration
		var stop <-chan struct{}
		status := 0
		switch {
		case err != nil:
			if failures++; failures > d.maxFailures || !retryableError(err) {
				return nil, fmt.Errorf("sdk: %s %s: giving up after %d tries: %w", req.Method, req.URL.Path, failures, err)
			}
			wait = bo.NextBackOff()
		case resp.StatusCode == http.StatusTooManyRequests ||
			resp.StatusCode == http.StatusConflict && envelopeCode(resp) == "idempotency_key_in_use":
			if waits++; d.maxWaits >= 0 && waits > d.maxWaits {
				return resp, nil
			}
			status = resp.StatusCode
			wait = d.afterOr(resp, time.Second)
			if status == http.StatusTooManyRequests {
				// Not yet run by the API: a graceful stop can end the wait.
				// Jitter spreads the callers told the same instant.
				stop = d.stop
				wait += rand.N(wait/5 + 250*time.Millisecond)
			}
		case retryableStatus(resp.StatusCode):
			if failures++; failures > d.maxFailures {
				return resp, nil
			}
			status = resp.StatusCode
			wait = d.afterOr(resp, bo.NextBackOff())
		default:
			return resp, nil
		}
		d.logRetry(ctx, req, resp, err, wait)
		if d.onRetry != nil {
			d.onRetry(status)
		}
		if resp != nil {
			// Read what is left so the connection can be reused.
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			_ = resp.Body.Close()
		}
		if err := sleep(ctx, stop, wait); err != nil {
			return nil, fmt.Errorf("sdk: %s %s: %w", req.Method, req.URL.Path, err)
		}
	}
}

func retryableStatus(status int) bool {
	switch status {
	case http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// retryableError is false for the network errors a retry cannot mend: a
// certificate the client does not trust.
func retryableError(err error) bool {
	var unknownAuthority x509.UnknownAuthorityError
	var verification *tls.CertificateVerificationError
	return !errors.As(err, &unknownAuthority) && !errors.As(err, &verification)
}

// newBackOff is the failure delay policy of one request when the API says
// nothing: waitMin doubling up to waitMax, with ±50% jitter, never giving
// up by itself (maxFailures bounds the tries).
func (d *retryDoer) newBackOff() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.Multiplier, b.RandomizationFactor = d.waitMin, d.waitMax, 2, 0.5
	b.MaxElapsedTime = 0
	b.Reset()
	return b
}

// afterOr is the answer's Retry-After (at most maxAfter), else def.
func (d *retryDoer) afterOr(resp *http.Response, def time.Duration) time.Duration {
	if w, ok := retryAfter(resp.Header); ok {
		return min(w, d.maxAfter)
	}
	return def
}

func (d *retryDoer) logRetry(ctx context.Context, req *http.Request, resp *http.Response, err error, wait time.Duration) {
	if d.log == nil {
		return
	}
	attrs := []any{"method", req.Method, "path", req.URL.Path, "wait", wait}
	level, msg := slog.LevelInfo, "network error, retrying"
	if resp != nil {
		attrs = append(attrs, "status", resp.StatusCode, "request_id", resp.Header.Get("X-Request-ID"))
		msg = "server error, retrying"
		switch resp.StatusCode {
		case http.StatusTooManyRequests:
			level, msg = slog.LevelDebug, "429, waiting Retry-After"
		case http.StatusConflict:
			level, msg = slog.LevelDebug, "idempotency key in use, waiting for the first try"
		}
	} else {
		attrs = append(attrs, "err", err)
	}
	d.log.Log(ctx, level, msg, attrs...)
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
		return ErrStopped
	}
}

// envelopeCode reads the error code of resp and leaves its body readable.
func envelopeCode(resp *http.Response) string {
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return ""
	}
	var e struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(body, &e)
	return e.Code
}

// retryAfter parses Retry-After as seconds or an HTTP date.
func retryAfter(h http.Header) (time.Duration, bool) {
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0), true
	}
	return 0, false
}
