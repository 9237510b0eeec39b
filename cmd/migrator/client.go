package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	sdk "github.com/gridshift/dataimport/sdk/go"
	"github.com/gridshift/dataimport/sdk/go/client"
)

// errStopped means a graceful stop ended a wait before the account's next
// request: nothing was started for it, so the account can be rerun.
var errStopped = errors.New("stopped")

const jsonType = "application/json"

// api is the Go SDK client of one command (token, retries, Retry-After,
// Idempotency-Keys and errors are the SDK's) with the counts of its summary.
type api struct {
	*sdk.Client
	log       *slog.Logger
	throttled atomic.Int64 // 429 answers waited out
	retried   atomic.Int64 // 5xx answers and network errors retried
}

// newAPI sizes the SDK's connection pool for conns requests at once and
// bounds each try's wait for headers. Every 429 is waited out (the API's
// concurrency limit paces a run) until stop closes: a graceful stop.
func (c *cli) newAPI(conns int, headerTimeout time.Duration, stop <-chan struct{}) (*api, error) {
	a := &api{log: c.log}
	sc, err := sdk.New(c.apiURL, c.apiKey, sdk.Options{Concurrency: conns, ResponseHeaderTimeout: headerTimeout,
		WaitMax: -1, GracefulStop: stop, Logger: c.log, OnRetry: func(status int) {
			switch status {
			case http.StatusTooManyRequests:
				a.throttled.Add(1)
			case http.StatusConflict: // idempotency_key_in_use: waiting for our own first try
			default:
				a.retried.Add(1)
			}
		}})
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	a.Client = sc
	return a, nil
}

// failed is the error of an answer of 400 or more, nil for any other.
func failed(resp *http.Response, body []byte) *sdk.APIError {
	if resp.StatusCode < 400 {
		return nil
	}
	return sdk.NewAPIError(resp, body)
}

// authRefused reports whether err is the API refusing the API key (or the
// tokens it gives): every further request would fail the same way.
func authRefused(err error) bool {
	var e *sdk.APIError
	return errors.As(err, &e) && e.StatusCode/100 == 4
}

// errorRows is one report row per field error, or one for the error.
func errorRows(id, outcome, code, detail string, errs []client.FieldError) []row {
	if len(errs) == 0 {
		return []row{{External: id, Outcome: outcome, Code: code, Detail: detail}}
	}
	rows := make([]row, 0, len(errs))
	for _, fe := range errs {
		rows = append(rows, row{External: id, Outcome: outcome, Code: fe.Code, Attr: fe.Attr, Detail: fe.Detail})
	}
	return rows
}

// latestRows reports a latest_error (of a status or a feed event).
func latestRows(id, outcome string, e *client.LatestError) []row {
	var errs []client.FieldError
	if e.Errors != nil {
		errs = *e.Errors
	}
	return errorRows(id, outcome, e.Code, e.Detail, errs)
}

// sleep waits d, or returns early when ctx ends or stop closes.
func sleep(ctx context.Context, stop <-chan struct{}, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-stop:
		return errStopped
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
