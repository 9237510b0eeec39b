package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hibiken/asynq"

	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
	"github.com/gridshift/dataimport/pkg/webhook"
)

// ErrEndpointBusy is returned (and retried soon by asynq, not counted as a
// failure) when an endpoint already has its share of attempts in flight.
var ErrEndpointBusy = errors.New("webhook endpoint has its maximum of attempts in flight")

// WebhookStore is the delivery state in Postgres.
type WebhookStore interface {
	ClaimWebhookAttempt(ctx context.Context, d postgres.WebhookDue, lease time.Duration) (*postgres.WebhookClaim, error)
	RecordWebhookAttempt(ctx context.Context, c *postgres.WebhookClaim, r postgres.WebhookResult) (*postgres.WebhookDue, error)
}

// InFlight bounds the attempts in flight per endpoint (cluster-wide, in
// Redis), so one slow or dead endpoint cannot occupy every delivery worker.
type InFlight interface {
	Acquire(ctx context.Context, endpointID int64, holder string) (bool, error)
	Release(ctx context.Context, endpointID int64, holder string) error
}

// Sender sends one signed attempt.
type Sender interface {
	Send(ctx context.Context, url string, secrets []string, msgID string, body []byte) webhook.Outcome
}

// WebhookHandler runs one delivery attempt.
type WebhookHandler struct {
	Store    WebhookStore
	InFlight InFlight
	Sender   Sender
	Queue    Enqueuer
	Schedule webhook.Schedule
	// Lease is how long a claimed attempt keeps its delivery from being
	// retried by the reconciler: longer than any attempt can take
	// (AttemptLease of WEBHOOK_TIMEOUT).
	Lease   time.Duration
	Metrics *WebhookMetrics
	Log     *slog.Logger
	Now     func() time.Time
}

// ProcessTask claims the attempt in Postgres, sends it, records the
// outcome and enqueues the next attempt when one is due.
func (h *WebhookHandler) ProcessTask(ctx context.Context, t *asynq.Task) error {
	var p queue.WebhookDelivery
	if err := queue.Decode(t, &p); err != nil {
		return err
	}
	holder, endpoint := p.TaskID(), p.EndpointID
	ok, err := h.InFlight.Acquire(ctx, endpoint, holder)
	if err != nil {
		return fmt.Errorf("webhook in-flight bound: %w", err)
	}
	if !ok {
		return ErrEndpointBusy
	}
	// The slot bounds what a slow endpoint can hold: the claim and the
	// request. It is given back before the outcome is written.
	var once sync.Once
	release := func() { once.Do(func() { _ = h.InFlight.Release(context.WithoutCancel(ctx), endpoint, holder) }) }
	defer release()

	claim, err := h.Store.ClaimWebhookAttempt(ctx, postgres.WebhookDue{DeliveryID: p.DeliveryID, Attempts: p.Attempts}, h.Lease)
	if err != nil || claim == nil {
		return err // nil claim: stale task, nothing to send
	}
	o := h.Sender.Send(ctx, claim.URL, []string{claim.Secret, claim.PreviousSecret}, claim.MsgID, claim.Body)
	release()
	r := postgres.WebhookResult{Status: o.Status, Latency: o.Latency, Error: o.ErrorText(), Excerpt: o.Excerpt,
		Delivered: o.Delivered(), Gone: o.Gone()}
	outcome := WebhookDelivered
	switch {
	case r.Delivered:
	case r.Gone:
		outcome = WebhookGone
	default:
		if d, ok := h.Schedule.Next(claim.Attempt); ok {
			r.RetryIn, outcome = d, WebhookRetry
		} else {
			outcome = WebhookGaveUp
		}
	}
	// Settle even if the task's context ended: the attempt happened.
	next, err := h.Store.RecordWebhookAttempt(context.WithoutCancel(ctx), claim, r)
	if err != nil {
		return err // the reconciler retries the attempt after its lease
	}
	h.Metrics.observe(outcome, h.Now().Sub(claim.OccurredAt))
	if outcome != WebhookDelivered {
		h.Log.InfoContext(ctx, "webhook attempt failed", "endpoint", claim.EndpointID, "event", claim.MsgID,
			"attempt", claim.Attempt, "status", o.Status, "err", r.Error, "outcome", outcome)
	}
	if next != nil {
		// Lost if Redis is down now: the reconciler enqueues it when due.
		if err := h.Queue.Enqueue(context.WithoutCancel(ctx), DueTask(*next)); err != nil {
			h.Log.WarnContext(ctx, "enqueue next webhook attempt; the reconciler will", "err", err.Error())
		}
	}
	return nil
}

// AttemptLease is the lease of attempts bounded by timeout: the timeout and
// half again (at least a second) for the bookkeeping around it.
func AttemptLease(timeout time.Duration) time.Duration { return timeout + max(time.Second, timeout/2) }

// DueTask is the task of a due attempt.
func DueTask(d postgres.WebhookDue) queue.WebhookDelivery {
	return queue.WebhookDelivery{DeliveryID: d.DeliveryID, EndpointID: d.EndpointID, Attempts: d.Attempts, DueAtMicro: d.DueAt.UnixMicro()}
}

// DispatchStore is what the dispatcher and the webhook reconciler use.
type DispatchStore interface {
	EnabledWebhookEndpoints(ctx context.Context) ([]int64, error)
	DispatchWebhookEvents(ctx context.Context, endpointID int64, limit int) ([]postgres.WebhookDue, bool, error)
	DueWebhookDeliveries(ctx context.Context, before time.Time, limit int) ([]postgres.WebhookDue, error)
	FeedGeneration() uint64
	WaitFeed(ctx context.Context, gen uint64) error
}

// WebhookDispatcher turns new events into deliveries: for every enabled
// endpoint it schedules the events after the endpoint's cursor (in
// Postgres, one transaction per page) and enqueues their first attempts. It
// wakes on the feed's NOTIFY and at least every Every (endpoints added,
// enabled or replayed). Every worker runs one: the endpoint row lock (SKIP
// LOCKED) lets one dispatcher at a time schedule an endpoint. Every
// reconcile pass it also enqueues due attempts whose task is gone.
type WebhookDispatcher struct {
	Store DispatchStore
	Queue Enqueuer
	Log   *slog.Logger
	Every time.Duration // reconcile passes, and dispatch without a NOTIFY
	Grace time.Duration // how long past due an attempt is before the reconciler enqueues it again
}

// dispatchPage is how many events one dispatch transaction schedules.
const dispatchPage = 500

// Run dispatches, and reconciles in the background, until ctx ends.
func (d *WebhookDispatcher) Run(ctx context.Context) {
	reconciled := make(chan struct{})
	go func() {
		defer close(reconciled)
		t := time.NewTicker(d.Every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				d.reconcile(ctx)
			}
		}
	}()
	defer func() { <-reconciled }()
	for ctx.Err() == nil {
		gen := d.Store.FeedGeneration()
		d.dispatch(ctx)
		wctx, cancel := context.WithTimeout(ctx, d.Every)
		err := d.Store.WaitFeed(wctx, gen)
		cancel()
		if errors.Is(err, postgres.ErrFeedWaitStopped) {
			return
		}
	}
}

func (d *WebhookDispatcher) dispatch(ctx context.Context) {
	ids, err := d.Store.EnabledWebhookEndpoints(ctx)
	if err != nil {
		d.warn(ctx, "list webhook endpoints", err)
		return
	}
	for _, id := range ids {
		for more := true; more && ctx.Err() == nil; {
			var due []postgres.WebhookDue
			due, more, err = d.Store.DispatchWebhookEvents(ctx, id, dispatchPage)
			if err != nil {
				d.warn(ctx, "dispatch webhook events", err)
				break
			}
			d.enqueue(ctx, due)
		}
	}
}

// reconcile enqueues again every attempt due for longer than Grace: its
// task was lost (or is stuck behind a busy endpoint; task ids make that a
// no-op for attempts whose task still exists).
func (d *WebhookDispatcher) reconcile(ctx context.Context) {
	const batch = 2000
	due, err := d.Store.DueWebhookDeliveries(ctx, time.Now().Add(-d.Grace), batch)
	if err != nil {
		d.warn(ctx, "due webhook deliveries", err)
		return
	}
	d.enqueue(ctx, due)
}

func (d *WebhookDispatcher) enqueue(ctx context.Context, due []postgres.WebhookDue) {
	for _, w := range due {
		if err := d.Queue.Enqueue(ctx, DueTask(w)); err != nil {
			d.warn(ctx, "enqueue webhook attempt; the next reconcile pass will", err)
			return
		}
	}
}

func (d *WebhookDispatcher) warn(ctx context.Context, msg string, err error) {
	if ctx.Err() == nil {
		d.Log.WarnContext(ctx, msg, "err", err.Error())
	}
}
