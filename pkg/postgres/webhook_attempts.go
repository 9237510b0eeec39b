package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/storable"
)

// WebhookClaim is one attempt a worker is about to send.
type WebhookClaim struct {
	DeliveryID int64
	EndpointID int64
	Attempt    int // 1-based, in this round
	URL        string
	Secret     string
	// PreviousSecret also signs while a rotation's overlap lasts ("" after).
	PreviousSecret string
	MsgID      string // the FeedEvent id: webhook-id
	Body       []byte // the FeedEvent JSON, built by the feed's reader
	OccurredAt time.Time
}

// ClaimWebhookAttempt starts attempt d.Attempts+1 of a pending delivery of
// an enabled endpoint: it counts the attempt and moves the delivery's due
// time to lease from now, so that if this worker dies mid-attempt the
// reconciler retries it then (and never while the attempt may still be
// running). The body is the FeedEvent the feed would give the endpoint's
// organisation for this event, read in the same transaction. It returns
// nil when there is nothing to send: the delivery moved on (another task
// of the same attempt ran, a replay, delivered, given up) or the endpoint is
// disabled. An event its organisation can no longer see (a supplier grant
// withdrawn) is given up.
func (db *DB) ClaimWebhookAttempt(ctx context.Context, d WebhookDue, lease time.Duration) (*WebhookClaim, error) {
	// One statement: attempts are claimed on the hot path, and the event
	// read after it is immutable once numbered, so no transaction spans both.
	c := WebhookClaim{DeliveryID: d.DeliveryID}
	var org, eventID int64
	err := db.sql.QueryRowContext(ctx, `
		UPDATE webhook_deliveries d SET attempts = d.attempts + 1, next_attempt_at = now() + $3 * interval '1 millisecond'
		  FROM webhook_endpoints w, import_process_events e
		 WHERE d.id = $1 AND d.attempts = $2 AND d.state = 'pending' AND w.id = d.endpoint_id AND w.enabled AND e.id = d.event_id
		RETURNING d.endpoint_id, d.attempts, w.url, w.secret,
			CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret ELSE '' END,
			w.organisation_id, d.event_id, e.occurred_at`,
		d.DeliveryID, d.Attempts, lease.Milliseconds()).
		Scan(&c.EndpointID, &c.Attempt, &c.URL, &c.Secret, &c.PreviousSecret, &org, &eventID, &c.OccurredAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("claim webhook attempt: %w", err)
	}
	events, _, err := feedPage(ctx, db.sql, feedQuery{orgID: org, limit: 1, eventIDs: []int64{eventID}})
	if err != nil {
		return nil, fmt.Errorf("claim webhook attempt: %w", err)
	}
	if len(events) == 0 {
		if _, err := db.sql.ExecContext(ctx, `UPDATE webhook_deliveries SET state = 'failed',
			last_error = 'the organisation no longer sees this event (supplier grant withdrawn)' WHERE id = $1 AND attempts = $2`,
			d.DeliveryID, c.Attempt); err != nil {
			return nil, fmt.Errorf("claim webhook attempt: %w", err)
		}
		return nil, nil
	}
	c.MsgID = events[0].ID
	if c.Body, err = json.Marshal(events[0]); err != nil {
		return nil, fmt.Errorf("claim webhook attempt: %w", err)
	}
	return &c, nil
}

// Bounds of the receiver's text kept with an attempt (bytes).
const (
	WebhookErrorMax   = 2000
	WebhookExcerptMax = 2000
)

// WebhookResult is how an attempt ended, for RecordWebhookAttempt.
type WebhookResult struct {
	Status  int // 0: no response
	Latency time.Duration
	Error   string
	Excerpt string
	// Delivered: a 2xx. Gone: a 410 (the endpoint is disabled). Otherwise
	// RetryIn > 0 schedules the next attempt, and 0 gives the delivery up.
	Delivered bool
	Gone      bool
	RetryIn   time.Duration
}

// RecordWebhookAttempt logs an attempt and settles its delivery: delivered,
// failed (and the endpoint disabled, for a 410; given up, when no retry is
// left) or due again after RetryIn. It returns the next attempt to enqueue,
// if any. An attempt whose delivery was replayed meanwhile is logged only.
func (db *DB) RecordWebhookAttempt(ctx context.Context, c *WebhookClaim, r WebhookResult) (*WebhookDue, error) {
	status := sql.NullInt64{Int64: int64(r.Status), Valid: r.Status != 0}
	// The error and the excerpt are the receiver's words (a body, a reason
	// phrase inside a transport error): cleaned before they are stored.
	r.Error = storable.Text(r.Error, WebhookErrorMax)
	r.Excerpt = storable.Text(r.Excerpt, WebhookExcerptMax)
	errText := sql.NullString{String: r.Error, Valid: r.Error != ""}
	// One statement (the hot path): log the attempt and settle the delivery.
	var (
		state   = "pending"
		retryUS int64
	)
	switch {
	case r.Delivered:
		state = "delivered"
	case r.Gone || r.RetryIn <= 0:
		state = "failed"
	default:
		retryUS = r.RetryIn.Microseconds()
	}
	var d WebhookDue
	record := func(excerpt sql.NullString) error {
		return db.sql.QueryRowContext(ctx, `
		WITH a AS (
			INSERT INTO webhook_attempts (delivery_id, attempt, status, latency_ms, error, response_excerpt)
			VALUES ($1, $2, $3, $4, $5, $6)
		)
		UPDATE webhook_deliveries SET state = $7, last_status = $3, last_latency_ms = $4, last_error = $5,
		       delivered_at = CASE WHEN $7 = 'delivered' THEN now() END,
		       next_attempt_at = CASE WHEN $7 = 'pending' THEN now() + $8 * interval '1 microsecond' ELSE next_attempt_at END
		 WHERE id = $1 AND attempts = $2 AND state = 'pending'
		RETURNING id, endpoint_id, attempts, next_attempt_at`,
			c.DeliveryID, c.Attempt, status, r.Latency.Milliseconds(), errText, excerpt, state, retryUS).
			Scan(&d.DeliveryID, &d.EndpointID, &d.Attempts, &d.DueAt)
	}
	err := record(sql.NullString{String: r.Excerpt, Valid: true})
	if err != nil && !errors.Is(err, sql.ErrNoRows) && ctx.Err() == nil && r.Excerpt != "" {
		// The outcome matters more than the excerpt: an attempt that is not
		// recorded is claimed and sent again after every lease, forever.
		slog.WarnContext(ctx, "webhook attempt: storing the response excerpt failed; recording the outcome without it",
			"delivery_id", c.DeliveryID, "attempt", c.Attempt, "err", err)
		err = record(sql.NullString{})
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil // replayed meanwhile: the attempt is logged only
	}
	if err != nil {
		return nil, fmt.Errorf("record webhook attempt: %w", err)
	}
	if r.Gone {
		if err := db.disableGoneWebhook(ctx, c.EndpointID); err != nil {
			return nil, fmt.Errorf("record webhook attempt: %w", err)
		}
	}
	if state != "pending" {
		return nil, nil
	}
	return &d, nil
}

// WebhookAttempt is one line of an endpoint's delivery log.
type WebhookAttempt struct {
	At        time.Time `json:"at"`
	EventID   string    `json:"event_id"`
	Attempt   int       `json:"attempt"`
	Status    *int      `json:"status"`
	LatencyMS int64     `json:"latency_ms"`
	Error     *string   `json:"error"`
	Excerpt   *string   `json:"response_excerpt"`
	State     string    `json:"delivery_state"`
}

// WebhookLog is the endpoint's last attempts, newest first.
func (db *DB) WebhookLog(ctx context.Context, endpointID int64, limit int) ([]WebhookAttempt, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT a.at, d.event_id, a.attempt, a.status, a.latency_ms, a.error, a.response_excerpt, d.state
		  FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
		 WHERE d.endpoint_id = $1 ORDER BY a.id DESC LIMIT $2`, endpointID, limit)
	if err != nil {
		return nil, fmt.Errorf("webhook log: %w", err)
	}
	defer rows.Close()
	out := []WebhookAttempt{}
	for rows.Next() {
		var (
			a  WebhookAttempt
			ev int64
			st sql.NullInt64
		)
		if err := rows.Scan(&a.At, &ev, &a.Attempt, &st, &a.LatencyMS, &a.Error, &a.Excerpt, &a.State); err != nil {
			return nil, fmt.Errorf("webhook log: %w", err)
		}
		if st.Valid {
			s := int(st.Int64)
			a.Status = &s
		}
		a.EventID = dataimport.FeedEventID(ev)
		out = append(out, a)
	}
	return out, rows.Err()
}

// CountDisabledWebhooks is the number of disabled endpoints (a gauge).
func (db *DB) CountDisabledWebhooks(ctx context.Context) (int64, error) {
	var n int64
	if err := db.sql.QueryRowContext(ctx, `SELECT count(*) FROM webhook_endpoints WHERE NOT enabled`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count disabled webhooks: %w", err)
	}
	return n, nil
}
