package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// WebhookEndpoint is a partner's registered receiver (migration 00011).
type WebhookEndpoint struct {
	ID             int64     `json:"id"`
	Organisation   string    `json:"organisation"`
	OrganisationID int64     `json:"-"`
	URL            string    `json:"url"`
	Description    *string   `json:"description"`
	Secret         string    `json:"-"`
	EventTypes     []string  `json:"event_types"` // empty: every published type
	Enabled        bool      `json:"enabled"`
	DisabledReason *string   `json:"disabled_reason"`
	Cursor         int64     `json:"cursor_position"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	// PreviousSecretExpiresAt: after a rotation, until when the old secret
	// still signs attempts beside the new one; nil when none does.
	PreviousSecretExpiresAt *time.Time `json:"previous_secret_expires_at"`
}

// NewWebhookEndpoint is what an operator registers. The URL has passed the
// SSRF guard (webhook.Guard.CheckURL) already.
type NewWebhookEndpoint struct {
	Organisation   string // by name (an operator) …
	OrganisationID int64  // … or by id (a partner's own key)
	URL            string
	Secret         string
	EventTypes     []string
	Description    string
}

// MaxWebhookEndpointsPerOrg bounds what one organisation can register: each
// endpoint costs a delivery row per event.
const MaxWebhookEndpointsPerOrg = 20

const endpointColumns = `w.id, o.name, w.organisation_id, w.url, w.secret, array_to_string(w.event_types, ','), w.enabled, w.disabled_reason,
	w.cursor_position, w.created_at, w.updated_at, w.description,
	CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret_expires_at END`

func scanEndpoint(row interface{ Scan(...any) error }) (WebhookEndpoint, error) {
	var e WebhookEndpoint
	var types string
	err := row.Scan(&e.ID, &e.Organisation, &e.OrganisationID, &e.URL, &e.Secret, &types, &e.Enabled,
		&e.DisabledReason, &e.Cursor, &e.CreatedAt, &e.UpdatedAt, &e.Description, &e.PreviousSecretExpiresAt)
	e.EventTypes = splitTypes(types)
	return e, err
}

// CreateWebhookEndpoint registers an endpoint. It receives events numbered
// from now on (importctl webhook replay sends earlier ones); an unknown
// event type or organisation is a *dataimport.Error.
func (db *DB) CreateWebhookEndpoint(ctx context.Context, n NewWebhookEndpoint) (WebhookEndpoint, error) {
	if _, err := feedEventNames(n.EventTypes); err != nil {
		return WebhookEndpoint{}, err
	}
	types := n.EventTypes
	if types == nil {
		types = []string{}
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return WebhookEndpoint{}, fmt.Errorf("create webhook endpoint: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var desc *string
	if n.Description != "" {
		desc = &n.Description
	}
	// The organisation row is locked so that concurrent registrations
	// cannot both pass the per-organisation bound.
	var orgID int64
	err = tx.QueryRowContext(ctx, `SELECT id FROM organisations WHERE ($1 <> '' AND name = $1) OR id = $2 FOR UPDATE`,
		n.Organisation, n.OrganisationID).Scan(&orgID)
	if errors.Is(err, sql.ErrNoRows) {
		return WebhookEndpoint{}, dataimport.Errorf(dataimport.CodeNotFound, "organisation %q does not exist", n.Organisation)
	}
	if err != nil {
		return WebhookEndpoint{}, fmt.Errorf("create webhook endpoint: %w", err)
	}
	var count int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM webhook_endpoints WHERE organisation_id = $1`, orgID).Scan(&count); err != nil {
		return WebhookEndpoint{}, fmt.Errorf("create webhook endpoint: %w", err)
	}
	if count >= MaxWebhookEndpointsPerOrg {
		return WebhookEndpoint{}, dataimport.Errorf(dataimport.CodeInvalid,
			"An organisation may register at most %d webhook endpoints; delete or reuse one.", MaxWebhookEndpointsPerOrg)
	}
	row := tx.QueryRowContext(ctx, `
		WITH w AS (
			INSERT INTO webhook_endpoints (organisation_id, url, secret, event_types, description, cursor_position)
			VALUES ($1, $2, $3, $4, $5, coalesce((SELECT max(position) FROM import_process_events), 0))
			RETURNING *)
		SELECT `+endpointColumns+` FROM w JOIN organisations o ON o.id = w.organisation_id`,
		orgID, n.URL, n.Secret, types, desc)
	e, err := scanEndpoint(row)
	if err != nil {
		return e, fmt.Errorf("create webhook endpoint: %w", err)
	}
	// The secret never enters the audit log.
	if err := auditSQL(ctx, tx, AuditWebhookCreate, webhookTarget(e.ID), nil,
		map[string]any{"organisation": e.Organisation, "url": e.URL, "event_types": e.EventTypes, "enabled": true}); err != nil {
		return e, err
	}
	if err := tx.Commit(); err != nil {
		return e, fmt.Errorf("create webhook endpoint: %w", err)
	}
	return e, nil
}

func webhookTarget(id int64) string { return "webhook:" + strconv.FormatInt(id, 10) }

// WebhookEndpoints lists endpoints, of one organisation when org is not "".
func (db *DB) WebhookEndpoints(ctx context.Context, org string) ([]WebhookEndpoint, error) {
	return db.listEndpoints(ctx, `o.name = $1 OR $1 = ''`, org)
}

// listEndpoints lists the endpoints matching where (over w and o), oldest first.
func (db *DB) listEndpoints(ctx context.Context, where string, args ...any) ([]WebhookEndpoint, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT `+endpointColumns+`
		  FROM webhook_endpoints w JOIN organisations o ON o.id = w.organisation_id
		 WHERE `+where+` ORDER BY w.id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list webhook endpoints: %w", err)
	}
	defer rows.Close()
	out := []WebhookEndpoint{}
	for rows.Next() {
		e, err := scanEndpoint(rows)
		if err != nil {
			return nil, fmt.Errorf("list webhook endpoints: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list webhook endpoints: %w", err)
	}
	return out, nil
}

// WebhookEndpoint reads one endpoint.
func (db *DB) WebhookEndpoint(ctx context.Context, id int64) (WebhookEndpoint, error) {
	e, err := scanEndpoint(db.sql.QueryRowContext(ctx, `SELECT `+endpointColumns+`
		  FROM webhook_endpoints w JOIN organisations o ON o.id = w.organisation_id WHERE w.id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return e, dataimport.Errorf(dataimport.CodeNotFound, "webhook endpoint %d does not exist", id)
	}
	if err != nil {
		return e, fmt.Errorf("read webhook endpoint %d: %w", id, err)
	}
	return e, nil
}

// SetWebhookEnabled enables an endpoint (its pending deliveries go out
// again) or disables it with a reason (nothing is sent until it is enabled).
func (db *DB) SetWebhookEnabled(ctx context.Context, id int64, enabled bool, reason string) error {
	var r *string
	if !enabled {
		if reason == "" {
			reason = "disabled by an operator"
		}
		r = &reason
	}
	action := AuditWebhookDisable
	if enabled {
		action = AuditWebhookEnable
	}
	return db.auditedWebhook(ctx, id, action, func(tx *sql.Tx) (before, after any, err error) {
		var was bool
		var wasReason *string
		if err := tx.QueryRowContext(ctx, `SELECT enabled, disabled_reason FROM webhook_endpoints WHERE id = $1 FOR UPDATE`, id).Scan(&was, &wasReason); err != nil {
			return nil, nil, err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_endpoints SET enabled = $2, disabled_reason = $3, updated_at = now() WHERE id = $1`, id, enabled, r); err != nil {
			return nil, nil, err
		}
		return map[string]any{"enabled": was, "disabled_reason": wasReason}, map[string]any{"enabled": enabled, "disabled_reason": r}, nil
	})
}

// disableGoneWebhook disables an endpoint whose receiver answered 410 Gone,
// with an audit row under the context's actor (the worker's: system). An
// endpoint disabled already (by an operator or an earlier 410) is left as
// it is, without a row.
func (db *DB) disableGoneWebhook(ctx context.Context, id int64) error {
	return db.auditedWebhook(ctx, id, AuditWebhookDisable, func(tx *sql.Tx) (before, after any, err error) {
		var reason string
		err = tx.QueryRowContext(ctx, `UPDATE webhook_endpoints SET enabled = false, updated_at = now(),
			disabled_reason = 'the receiver answered 410 Gone at ' || to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
			WHERE id = $1 AND enabled RETURNING disabled_reason`, id).Scan(&reason)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil, errNoChange
		}
		if err != nil {
			return nil, nil, err
		}
		return map[string]any{"enabled": true, "disabled_reason": nil}, map[string]any{"enabled": false, "disabled_reason": reason}, nil
	})
}

// RotateWebhookSecret replaces an endpoint's signing secret; attempts from
// now on are signed with the new one and, for overlap, also with the one it
// replaces (0: the old one stops at once).
func (db *DB) RotateWebhookSecret(ctx context.Context, id int64, secret string, overlap time.Duration) error {
	return db.auditedWebhook(ctx, id, AuditWebhookRotate, func(tx *sql.Tx) (before, after any, err error) {
		res, err := tx.ExecContext(ctx, `UPDATE webhook_endpoints SET
			previous_secret = CASE WHEN $3 > 0 THEN secret END,
			previous_secret_expires_at = CASE WHEN $3 > 0 THEN now() + $3 * interval '1 millisecond' END,
			secret = $2, updated_at = now() WHERE id = $1`, id, secret, overlap.Milliseconds())
		if err != nil {
			return nil, nil, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil, nil, sql.ErrNoRows
		}
		// The secrets themselves never enter the audit log.
		return nil, map[string]any{"secret_rotated": true, "previous_valid_for": overlap.String()}, nil
	})
}

// auditedWebhook runs fn on endpoint id in a transaction with the audit row
// fn describes; sql.ErrNoRows from fn means the endpoint does not exist,
// errNoChange that nothing changed (no row, no error).
func (db *DB) auditedWebhook(ctx context.Context, id int64, action string, fn func(tx *sql.Tx) (before, after any, err error)) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("update webhook endpoint %d: %w", id, err)
	}
	defer func() { _ = tx.Rollback() }()
	before, after, err := fn(tx)
	if errors.Is(err, errNoChange) {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return dataimport.Errorf(dataimport.CodeNotFound, "webhook endpoint %d does not exist", id)
	}
	if err != nil {
		return fmt.Errorf("update webhook endpoint %d: %w", id, err)
	}
	if err := auditSQL(ctx, tx, action, webhookTarget(id), before, after); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("update webhook endpoint %d: %w", id, err)
	}
	return nil
}

// WebhookDue is a delivery whose next attempt is due at DueAt: what a
// delivery task carries (its task id is made of all three fields, so an
// attempt is enqueued once however often it is found due).
type WebhookDue struct {
	DeliveryID int64
	EndpointID int64
	Attempts   int // attempts made so far in this round
	DueAt      time.Time
}

// EnabledWebhookEndpoints lists the ids of the endpoints to dispatch to.
func (db *DB) EnabledWebhookEndpoints(ctx context.Context) ([]int64, error) {
	ids, err := queryIDs(ctx, db.sql, `SELECT id FROM webhook_endpoints WHERE enabled ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list enabled webhook endpoints: %w", err)
	}
	return ids, nil
}

// DispatchWebhookEvents schedules the endpoint's next events: in one
// transaction it reads up to limit events after the endpoint's cursor
// through the feed's own reader (same tenancy and type filter), inserts a
// delivery for each (unique per endpoint and event) and moves the cursor.
// The endpoint row is locked with SKIP LOCKED, so dispatchers in several
// worker replicas never schedule the same endpoint at once; a locked or
// disabled endpoint gives nothing. more says a full page was read.
func (db *DB) DispatchWebhookEvents(ctx context.Context, endpointID int64, limit int) (due []WebhookDue, more bool, err error) {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return nil, false, fmt.Errorf("dispatch webhook events: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var (
		org, cursor int64
		types       string
	)
	err = tx.QueryRowContext(ctx, `SELECT organisation_id, cursor_position, array_to_string(event_types, ',') FROM webhook_endpoints
		WHERE id = $1 AND enabled FOR UPDATE SKIP LOCKED`, endpointID).Scan(&org, &cursor, &types)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("dispatch webhook events: %w", err)
	}
	// The tail is read before the page: every position up to it is visible
	// already (the relay commits positions in increasing order), so when the
	// page is not full the cursor may skip to it past other organisations'
	// events instead of scanning them again next time.
	var tail sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT max(position) FROM import_process_events`).Scan(&tail); err != nil {
		return nil, false, fmt.Errorf("dispatch webhook events: %w", err)
	}
	events, next, err := feedPage(ctx, tx, feedQuery{orgID: org, after: cursor, limit: limit, types: splitTypes(types)})
	if err != nil {
		return nil, false, fmt.Errorf("dispatch webhook events: %w", err)
	}
	more = len(events) == limit
	if !more {
		next = max(next, tail.Int64)
	}
	if next == cursor {
		return nil, false, nil
	}
	if len(events) > 0 {
		ids := make([]int64, len(events))
		for i, e := range events {
			ids[i], _ = dataimport.ParseFeedEventID(e.ID)
		}
		rows, err := tx.QueryContext(ctx, `INSERT INTO webhook_deliveries (endpoint_id, event_id)
			SELECT $1, unnest($2::bigint[]) ON CONFLICT (endpoint_id, event_id) DO NOTHING
			RETURNING id, endpoint_id, attempts, next_attempt_at`, endpointID, ids)
		if err != nil {
			return nil, false, fmt.Errorf("dispatch webhook events: %w", err)
		}
		due, err = scanDue(rows)
		if err != nil {
			return nil, false, fmt.Errorf("dispatch webhook events: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE webhook_endpoints SET cursor_position = $2 WHERE id = $1`, endpointID, next); err != nil {
		return nil, false, fmt.Errorf("dispatch webhook events: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, false, fmt.Errorf("dispatch webhook events: %w", err)
	}
	return due, more, nil
}

func scanDue(rows *sql.Rows) ([]WebhookDue, error) {
	defer rows.Close()
	var out []WebhookDue
	for rows.Next() {
		var d WebhookDue
		if err := rows.Scan(&d.DeliveryID, &d.EndpointID, &d.Attempts, &d.DueAt); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// DueWebhookDeliveries lists pending deliveries of enabled endpoints whose
// next attempt was due by before: the reconciler enqueues them again (a
// grace period after they fell due, so that it does not race the live
// tasks), so deliveries whose task Redis lost (FLUSHALL, failover) or a
// killed worker never finished still go out.
func (db *DB) DueWebhookDeliveries(ctx context.Context, before time.Time, limit int) ([]WebhookDue, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT d.id, d.endpoint_id, d.attempts, d.next_attempt_at FROM webhook_deliveries d
		JOIN webhook_endpoints w ON w.id = d.endpoint_id AND w.enabled
		WHERE d.state = 'pending' AND d.next_attempt_at <= $1 ORDER BY d.next_attempt_at LIMIT $2`, before, limit)
	if err != nil {
		return nil, fmt.Errorf("due webhook deliveries: %w", err)
	}
	due, err := scanDue(rows)
	if err != nil {
		return nil, fmt.Errorf("due webhook deliveries: %w", err)
	}
	return due, nil
}

// ReplayWebhook schedules again every event of the endpoint's (already
// dispatched) events that occurred at or after since: deliveries are
// reset to a new round of attempts, due now, with the same event ids.
// It returns how many events it scheduled.
func (db *DB) ReplayWebhook(ctx context.Context, endpointID int64, since time.Time) ([]WebhookDue, error) {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("replay webhook: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var (
		org, cursor int64
		types       string
	)
	err = tx.QueryRowContext(ctx, `SELECT organisation_id, cursor_position, array_to_string(event_types, ',') FROM webhook_endpoints
		WHERE id = $1 FOR UPDATE`, endpointID).Scan(&org, &cursor, &types)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, dataimport.Errorf(dataimport.CodeNotFound, "webhook endpoint %d does not exist", endpointID)
	}
	if err != nil {
		return nil, fmt.Errorf("replay webhook: %w", err)
	}
	var first sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT min(position) FROM import_process_events WHERE occurred_at >= $1 AND position IS NOT NULL`,
		since).Scan(&first); err != nil {
		return nil, fmt.Errorf("replay webhook: %w", err)
	}
	var due []WebhookDue
	for after := first.Int64 - 1; first.Valid && after < cursor; {
		events, next, err := feedPage(ctx, tx, feedQuery{orgID: org, after: after, limit: MaxFeedPage, types: splitTypes(types)})
		if err != nil {
			return nil, fmt.Errorf("replay webhook: %w", err)
		}
		var ids []int64
		for _, e := range events {
			if e.Position > cursor {
				break // the dispatcher schedules these
			}
			id, _ := dataimport.ParseFeedEventID(e.ID)
			ids = append(ids, id)
		}
		if len(ids) > 0 {
			rows, err := tx.QueryContext(ctx, `INSERT INTO webhook_deliveries (endpoint_id, event_id)
				SELECT $1, unnest($2::bigint[])
				ON CONFLICT (endpoint_id, event_id) DO UPDATE SET state = 'pending', attempts = 0, next_attempt_at = now(), delivered_at = NULL
				RETURNING id, endpoint_id, attempts, next_attempt_at`, endpointID, ids)
			if err != nil {
				return nil, fmt.Errorf("replay webhook: %w", err)
			}
			d, err := scanDue(rows)
			if err != nil {
				return nil, fmt.Errorf("replay webhook: %w", err)
			}
			due = append(due, d...)
		}
		if len(events) < MaxFeedPage {
			break
		}
		after = next
	}
	if err := auditSQL(ctx, tx, AuditWebhookReplay, webhookTarget(endpointID), nil,
		map[string]any{"since": since.UTC().Format(time.RFC3339), "events": len(due)}); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("replay webhook: %w", err)
	}
	return due, nil
}

// splitTypes reads an endpoint's event types (array_to_string'd: type
// names have no commas).
func splitTypes(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, ",")
}

// WebhookHealthRow is an endpoint's health for the operator console.
type WebhookHealthRow struct {
	ID             int64
	Organisation   string
	URL            string
	Enabled        bool
	DisabledReason *string
	// LastDelivery is when its newest delivered event arrived.
	LastDelivery *time.Time
	// Retrying counts deliveries still pending after at least one failed
	// attempt; Failed those that gave up after the whole retry schedule.
	Retrying, Failed int64
}

// WebhookHealth reads every endpoint's health. The counts come from the
// deliveries not (yet) delivered, which stay few while receivers answer; the
// newest delivery is read backwards along (endpoint_id, event_id).
func (db *DB) WebhookHealth(ctx context.Context) ([]WebhookHealthRow, error) {
	return db.webhookHealth(ctx, 0)
}

// webhookHealth reads the health of endpoint id, or of every endpoint (0).
func (db *DB) webhookHealth(ctx context.Context, id int64) ([]WebhookHealthRow, error) {
	rows, err := db.sql.QueryContext(ctx, `
		SELECT w.id, o.name, w.url, w.enabled, w.disabled_reason,
		       (SELECT d.delivered_at FROM webhook_deliveries d
		         WHERE d.endpoint_id = w.id AND d.state = 'delivered' ORDER BY d.event_id DESC LIMIT 1),
		       (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = w.id AND d.state = 'pending' AND d.attempts > 0),
		       (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = w.id AND d.state = 'failed')
		  FROM webhook_endpoints w JOIN organisations o ON o.id = w.organisation_id
		 WHERE $1 = 0 OR w.id = $1
		 ORDER BY o.name, w.id`, id)
	if err != nil {
		return nil, fmt.Errorf("read webhook health: %w", err)
	}
	defer rows.Close()
	var out []WebhookHealthRow
	for rows.Next() {
		var h WebhookHealthRow
		if err := rows.Scan(&h.ID, &h.Organisation, &h.URL, &h.Enabled, &h.DisabledReason, &h.LastDelivery, &h.Retrying, &h.Failed); err != nil {
			return nil, fmt.Errorf("read webhook health: %w", err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read webhook health: %w", err)
	}
	return out, nil
}
