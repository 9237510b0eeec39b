package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// With --follow events, accounts still in progress are followed through the
// event feed (GET /v1/data-import/events/, long-polled) instead of each
// polling its status URL: one request at a time serves the whole run.

// Follow modes.
const (
	followStatus = "status"
	followEvents = "events"
)

// terminalTypes are the feed events that end an attempt.
var terminalTypes = []string{"import_process.complete-v1", "import_process.error-v1", "import_process.cancelled-v1",
	"import_process.dry_run_complete-v1", "import_process.dry_run_error-v1"}

// feedEvent is an item of the feed (CONTRACT §9).
type feedEvent struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	Data struct {
		ImportSupplier        string    `json:"import_supplier"`
		ExternalAccountNumber string    `json:"external_account_number"`
		PlatformAccountNumber *string   `json:"platform_account_number"`
		Status                string    `json:"status"`
		Error                 *apiError `json:"error"`
	} `json:"data"`
}

type accountKey struct{ supplier, external string }

// follower reads the feed from where the run began and hands each terminal
// event to the accounts waiting for it. Accounts register before the
// request that starts (or looks at) their attempt, so no event of theirs is
// read before they wait for it; events of accounts nobody waits for are
// dropped, so memory stays bounded by the accounts in flight.
type follower struct {
	api  *client
	log  *slog.Logger
	wait time.Duration // long-poll of one feed request

	mu      sync.Mutex
	waiters map[accountKey][]chan feedEvent
	err     error         // why following stopped, once failed is closed
	failed  chan struct{} // closed when the feed can no longer be followed
}

// startFollower takes the feed's current end as its start, then follows it
// until ctx ends.
func startFollower(ctx context.Context, api *client, log *slog.Logger, requestTimeout time.Duration) (*follower, error) {
	f := &follower{api: api, log: log, wait: min(20*time.Second, requestTimeout/2),
		waiters: map[accountKey][]chan feedEvent{}, failed: make(chan struct{})}
	page, err := f.read(ctx, "latest", 0)
	if err != nil {
		return nil, fmt.Errorf("follow events: %w", err)
	}
	go f.run(ctx, page.Next)
	return f, nil
}

type feedPage struct {
	Events []feedEvent `json:"events"`
	Next   string      `json:"next"`
}

func (f *follower) read(ctx context.Context, after string, wait time.Duration) (feedPage, error) {
	q := url.Values{"after": {after}, "limit": {"1000"}, "type": terminalTypes}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	var page feedPage
	resp, err := f.api.do(ctx, request{method: http.MethodGet, path: apiPrefix + "/events/?" + q.Encode()})
	if err != nil {
		return page, err
	}
	if resp.Status != http.StatusOK {
		e := resp.apiErr()
		return page, fmt.Errorf("event feed: HTTP %d %s: %s", resp.Status, e.Code, e.Detail)
	}
	if err := json.Unmarshal(resp.Body, &page); err != nil || page.Next == "" {
		return page, fmt.Errorf("event feed: undecodable answer: %w", errors.Join(err, errors.New(truncate(string(resp.Body), 200))))
	}
	return page, nil
}

func (f *follower) run(ctx context.Context, cursor string) {
	for {
		page, err := f.read(ctx, cursor, f.wait)
		if err != nil {
			if ctx.Err() == nil {
				f.log.WarnContext(ctx, "cannot follow the event feed; polling status URLs instead", "err", err)
			}
			f.fail(err)
			return
		}
		for _, ev := range page.Events {
			f.deliver(ev)
		}
		cursor = page.Next
	}
}

func (f *follower) deliver(ev feedEvent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.waiters[accountKey{ev.Data.ImportSupplier, ev.Data.ExternalAccountNumber}] {
		select {
		case ch <- ev:
		default: // the waiter has unread events; it looks at the status anyway
		}
	}
}

func (f *follower) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
	close(f.failed)
}

// expect registers interest in an account's events; call the returned
// function when done with it.
func (f *follower) expect(k accountKey) (<-chan feedEvent, func()) {
	ch := make(chan feedEvent, 4)
	f.mu.Lock()
	f.waiters[k] = append(f.waiters[k], ch)
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		ws := f.waiters[k]
		for i, c := range ws {
			if c == ch {
				ws = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(f.waiters, k)
		} else {
			f.waiters[k] = ws
		}
	}
}

// follow waits for the outcome of an account in progress: through the feed
// when following events, else by polling its status.
func (p *pusher) follow(ctx context.Context, a account, events <-chan feedEvent, wait time.Duration) result {
	if p.events == nil || events == nil {
		return p.poll(ctx, a, wait)
	}
	id := a.id()
	deadline := time.NewTimer(p.o.pollTimeout)
	defer deadline.Stop()
	for {
		select {
		case ev := <-events:
			if res, done := p.fromEvent(ctx, a, ev); done {
				return res
			}
		case <-p.events.failed:
			return p.poll(ctx, a, 0)
		case <-deadline.C:
			return result{outcome: outcomeFailed, rows: []row{{External: id, Outcome: outcomeFailed, Code: "account_import_in_progress",
				Detail: fmt.Sprintf("Still in progress after %s; rerun to follow it.", p.o.pollTimeout)}}}
		case <-ctx.Done():
			return fromErr(id, context.Cause(ctx))
		}
	}
}

// fromEvent turns a terminal event into the account's result. A complete
// event is final. Any other could be the late-numbered event of an earlier
// attempt, so one status read confirms the attempt is over (and gives its
// latest_error); while it is still in progress, keep waiting.
func (p *pusher) fromEvent(ctx context.Context, a account, ev feedEvent) (result, bool) {
	id := a.id()
	if ev.Type == "import_process.complete-v1" {
		number := ""
		if ev.Data.PlatformAccountNumber != nil {
			number = *ev.Data.PlatformAccountNumber
		}
		return p.completed(ctx, a, outcomeCompleted, number, ""), true
	}
	st, found, resp, err := p.status(ctx, a)
	switch {
	case err != nil:
		return fromErr(id, err), true
	case resp != nil:
		return fromResponse(id, outcomeFailed, resp), true
	case !found:
		return result{outcome: outcomeFailed, rows: []row{{External: id, Outcome: outcomeFailed, Code: "not_found",
			Detail: "The status endpoint no longer knows this account."}}}, true
	case st.Status == "IN_PROGRESS":
		p.log.DebugContext(ctx, "event of an earlier attempt; still following", "account", id, "event", ev.ID)
		return result{}, false
	case st.Status == "COMPLETED": // created after all (a later attempt); its event follows
		return p.completed(ctx, a, outcomeCompleted, st.PlatformAccountNumber, ""), true
	}
	switch ev.Type {
	case "import_process.dry_run_complete-v1":
		return result{outcome: outcomeDryRunOK, rows: []row{{External: id, Outcome: outcomeDryRunOK, Code: "dry_run_rolled_back",
			Detail: "Account would import successfully. Rolled back due to dry run."}}}, true
	case "import_process.cancelled-v1":
		return result{outcome: outcomeFailed, rows: []row{{External: id, Outcome: outcomeFailed, Code: "import_process_cancelled",
			Detail: "The creation was cancelled before it started; rerun to create it."}}}, true
	}
	e := st.LatestError
	if e == nil {
		e = ev.Data.Error
	}
	if e == nil {
		return result{outcome: outcomeFailed, rows: []row{{External: id, Outcome: outcomeFailed, Code: "import_failed",
			Detail: "Creation ended without an account and without an error; rerun to retry."}}}, true
	}
	return result{outcome: outcomeFailed, rows: errorRows(id, outcomeFailed, *e)}, true
}
