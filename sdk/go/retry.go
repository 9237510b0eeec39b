package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-retryablehttp"
)

// retryDoer sends a request through go-retryablehttp, which replays its
// body on every try.
type retryDoer struct{ rc *retryablehttp.Client }

// IdempotencyKeyHeader makes a POST safe to retry (the API stores the first
// complete answer per key and replays it).
const IdempotencyKeyHeader = "Idempotency-Key"

func (d *retryDoer) Do(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && !isGraphQL(req) && req.Header.Get(IdempotencyKeyHeader) == "" {
		// One key per request, made before the first try, so every retry
		// of it carries the same one.
		req.Header.Set(IdempotencyKeyHeader, uuid.NewString())
	}
	rreq, err := retryablehttp.FromRequest(req)
	if err != nil {
		return nil, fmt.Errorf("sdk: %w", err)
	}
	return d.rc.Do(rreq)
}

// checkRetry retries network errors (as go-retryablehttp does by default),
// 429, 500, 502, 503 and 504, and 409 idempotency_key_in_use (the first try
// of the same request is still running: its answer comes after
// Retry-After). Everything else is final.
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, context.Cause(ctx)
	}
	if err != nil {
		return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true, nil
	case http.StatusConflict:
		return envelopeCode(resp) == "idempotency_key_in_use", nil
	}
	return false, nil
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

// backoff waits what Retry-After asks (at most maxAfter) when the answer
// has one, else go-retryablehttp's exponential backoff.
func backoff(maxAfter time.Duration) retryablehttp.Backoff {
	return func(lo, hi time.Duration, attempt int, resp *http.Response) time.Duration {
		if resp != nil {
			if d, ok := retryAfter(resp.Header); ok {
				return min(d, maxAfter)
			}
		}
		return retryablehttp.DefaultBackoff(lo, hi, attempt, nil)
	}
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
