package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	sdk "github.com/gridshift/dataimport/sdk/go"
	"github.com/gridshift/dataimport/sdk/go/client"
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
var terminalTypes = []client.FeedEventType{client.ImportProcessCompleteV1, client.ImportProcessErrorV1, client.ImportProcessCancelledV1,
	client.ImportProcessDryRunCompleteV1, client.ImportProcessDryRunErrorV1}

// feedEvent is an item of the feed (CONTRACT §9).
type feedEvent = client.FeedEvent

type accountKey struct{ supplier, external string }

// follower reads the feed from where the run began and hands each terminal
// event to the accounts waiting for it. Accounts register before the
// request that starts (or looks at) their attempt, so no event of theirs is
// read before they wait for it; events of accounts nobody waits for are
// dropped, so memory stays bounded by the accounts in flight.
type follower struct {
	api  *api
	log  *slog.Logger
	wait time.Duration // long-poll of one feed request

	mu      sync.Mutex
	waiters map[accountKey][]chan feedEvent
	err     error         // why following stopped, once failed is closed
	failed  chan struct{} // closed when the feed can no longer be followed
}

// startFollower takes the feed's current end as its start, then follows it
// until ctx ends.
func startFollower(ctx context.Context, api *api, log *slog.Logger, requestTimeout time.Duration) (*follower, error) {
	f := &follower{api: api, log: log, wait: min(20*time.Second, requestTimeout/2),
		waiters: map[accountKey][]chan feedEvent{}, failed: make(chan struct{})}
	page, err := f.read(ctx, "latest", 0)
	if err != nil {
		return nil, fmt.Errorf("follow events: %w", err)
	}
	go f.run(ctx, page.Next)
	return f, nil
}

func (f *follower) read(ctx context.Context, after string, wait time.Duration) (*client.FeedPage, error) {
	limit := 1000
	params := &client.EventFeedParams{After: &after, Limit: &limit, Type: &terminalTypes}
	if wait > 0 {
		w := wait.String()
		params.Wait = &w
	}
	resp, err := f.api.EventFeedWithResponse(ctx, params)
	if err != nil {
		return nil, fmt.Errorf("event feed: %w", err)
	}
	if resp.StatusCode() != http.StatusOK {
		return nil, fmt.Errorf("event feed: %w", sdk.NewAPIError(resp.HTTPResponse, resp.Body))
	}
	if resp.JSON200 == nil || resp.JSON200.Next == "" {
		return nil, fmt.Errorf("event feed: undecodable answer %.200q", resp.Body)
	}
	return resp.JSON200, nil
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
	// Only an account's event has an account to wake (a job's or a
	// supplier's has none).
	d, err := ev.Data.AsFeedEventData()
	if err != nil || d.ExternalAccountNumber == "" {
		return
	}
	for _, ch := range f.waiters[accountKey{d.ImportSupplier, d.ExternalAccountNumber}] {
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
	data, _ := ev.Data.AsFeedEventData() // delivered only for an account's event
	if ev.Type == client.ImportProcessCompleteV1 {
		number := ""
		if data.PlatformAccountNumber != nil {
			number = *data.PlatformAccountNumber
		}
		return p.completed(ctx, a, outcomeCompleted, number, ""), true
	}
	st, failure, err := p.status(ctx, a)
	switch {
	case err != nil:
		return fromErr(id, err), true
	case failure != nil:
		return fromAPIError(id, outcomeFailed, failure), true
	case st == nil:
		return result{outcome: outcomeFailed, rows: []row{{External: id, Outcome: outcomeFailed, Code: "not_found",
			Detail: "The status endpoint no longer knows this account."}}}, true
	case st.Status == client.ImportStatusINPROGRESS:
		p.log.DebugContext(ctx, "event of an earlier attempt; still following", "account", id, "event", ev.Id)
		return result{}, false
	case st.Status == client.ImportStatusCOMPLETED: // created after all (a later attempt); its event follows
		return p.completed(ctx, a, outcomeCompleted, st.PlatformAccountNumber, ""), true
	}
	switch ev.Type {
	case client.ImportProcessDryRunCompleteV1:
		return result{outcome: outcomeDryRunOK, rows: []row{{External: id, Outcome: outcomeDryRunOK, Code: "dry_run_rolled_back",
			Detail: "Account would import successfully. Rolled back due to dry run."}}}, true
	case client.ImportProcessCancelledV1:
		return result{outcome: outcomeFailed, rows: []row{{External: id, Outcome: outcomeFailed, Code: "import_process_cancelled",
			Detail: "The creation was cancelled before it started; rerun to create it."}}}, true
	}
	e := st.LatestError
	if e == nil {
		e = data.Error
	}
	if e == nil {
		return result{outcome: outcomeFailed, rows: []row{{External: id, Outcome: outcomeFailed, Code: "import_failed",
			Detail: "Creation ended without an account and without an error; rerun to retry."}}}, true
	}
	return result{outcome: outcomeFailed, rows: latestRows(id, outcomeFailed, e)}, true
}
