package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Page sizes of FeedPage.
const (
	DefaultFeedPage = 100
	MaxFeedPage     = 1000
)

// FeedPage reads the published events (CONTRACT §9) that organisation orgID
// may see: those of the suppliers granted to it. It returns, in position
// (commit) order, up to limit events whose position is greater than after,
// and the cursor for the next call: the last event's position, or after
// itself when there is none, so a caller can loop on it.
//
//   - after: 0 for the start of the feed (FeedTail for "from now on").
//   - limit: <= 0 means DefaultFeedPage; more than MaxFeedPage is cut to it.
//   - types: published type names (dataimport.PublishedTypes()); empty means
//     all. An unknown name is a *dataimport.Error (invalid_choice).
//   - supplierCode: "" for every granted supplier; otherwise only that
//     supplier's events (none when it is not granted: callers that must tell
//     the caller so check SupplierForOrganisation first).
//
// Positions are numbered by the relay (relay.go) only once no transaction
// that could still add an earlier event is running, so a cursor never skips
// an event committed late. Events of rolled-back work never exist. It reads
// the primary: a replica could trail the relay's NOTIFY.
func (db *DB) FeedPage(ctx context.Context, orgID int64, after int64, limit int, types []string, supplierCode string) ([]dataimport.FeedEvent, int64, error) {
	return feedPage(ctx, db.sql, feedQuery{orgID: orgID, after: after, limit: limit, types: types, supplier: supplierCode})
}

// queryer is a *sql.DB or a *sql.Tx: the feed is read alone (FeedPage) or
// inside the transaction that schedules webhook deliveries (webhooks.go).
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// feedQuery selects published events. It is the one place that builds a
// FeedEvent: the pull feed and every webhook body come from here.
type feedQuery struct {
	orgID    int64
	after    int64
	limit    int
	types    []string
	supplier string
	// eventIDs, when not nil, keeps only these event-log rows (a webhook
	// delivery's event, still subject to the organisation's grants).
	eventIDs []int64
}

const feedSelect = `
		SELECT e.id, e.position, e.event, e.occurred_at, s.code, coalesce(p.external_account_number, ''),
		       CASE WHEN e.event = ANY($6::text[]) THEN p.platform_account_number
		            ELSE e.data->>'platform_account_number' END,
		       CASE WHEN e.process_id IS NULL THEN e.data ELSE e.data->'error' END
		  FROM import_process_events e
		  LEFT JOIN import_processes p ON p.id = e.process_id
		  JOIN organisation_suppliers g ON g.supplier_id = coalesce(p.supplier_id, e.supplier_id) AND g.organisation_id = $1
		  JOIN import_suppliers s ON s.id = g.supplier_id
		 WHERE e.position > $2 AND e.event = ANY($3::text[]) AND ($4 = '' OR s.code = $4)
		   AND (e.organisation_id IS NULL OR e.organisation_id = $1)`

func feedPage(ctx context.Context, q queryer, f feedQuery) ([]dataimport.FeedEvent, int64, error) {
	limit, after := f.limit, max(f.after, 0)
	if limit <= 0 {
		limit = DefaultFeedPage
	}
	limit = min(limit, MaxFeedPage)
	events, err := feedEventNames(f.types)
	if err != nil {
		return nil, after, err
	}
	query := feedSelect + ` ORDER BY e.position LIMIT $5`
	args := []any{f.orgID, after, events, f.supplier, limit,
		[]string{dataimport.EventPostImportOK, dataimport.EventPostImportError}}
	if f.eventIDs != nil {
		query = feedSelect + ` AND e.id = ANY($7::bigint[]) ORDER BY e.position LIMIT $5`
		args = append(args, f.eventIDs)
	}
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, after, fmt.Errorf("read event feed: %w", err)
	}
	defer rows.Close()
	out := make([]dataimport.FeedEvent, 0, min(limit, 128))
	next := after
	for rows.Next() {
		var (
			id       int64
			ev       dataimport.FeedEvent
			event    string
			at       time.Time
			platform sql.NullString
			errJSON  []byte
		)
		if err := rows.Scan(&id, &ev.Position, &event, &at, &ev.Data.ImportSupplier, &ev.Data.ExternalAccountNumber, &platform, &errJSON); err != nil {
			return nil, after, fmt.Errorf("read event feed: %w", err)
		}
		ev.ID = dataimport.FeedEventID(id)
		ev.Type, _ = dataimport.PublishedType(event)
		ev.OccurredAt = dataimport.NewDateTime(at)
		if !dataimport.AccountEvent(event) {
			// A job's or a supplier's event: its data as written, with the
			// supplier's code and, for a job, where its failures are summed up.
			if ev.Data.Other, err = partnerEventData(event, ev.Data.ImportSupplier, errJSON); err != nil {
				return nil, after, fmt.Errorf("read event feed: event %d: %w", id, err)
			}
			out = append(out, ev)
			next = ev.Position
			continue
		}
		ev.Data.Status, _ = dataimport.EventStatus(event)
		if platform.Valid && platform.String != "" {
			n := platform.String
			ev.Data.PlatformAccountNumber = &n
		}
		if len(errJSON) > 0 && string(errJSON) != "null" {
			var e dataimport.Error
			if err := json.Unmarshal(errJSON, &e); err != nil {
				return nil, after, fmt.Errorf("read event feed: error of event %d: %w", id, err)
			}
			ev.Data.Error = &e
		}
		out = append(out, ev)
		next = ev.Position
	}
	if err := rows.Err(); err != nil {
		return nil, after, fmt.Errorf("read event feed: %w", err)
	}
	return out, next, nil
}

// feedEventNames maps published type names to the timeline events they name;
// no names means every published event.
func feedEventNames(types []string) ([]string, error) {
	if len(types) == 0 {
		return dataimport.PublishedEvents(), nil
	}
	out := make([]string, 0, len(types))
	for _, t := range types {
		e, ok := dataimport.PublishedEvent(t)
		if !ok {
			return nil, &dataimport.Error{Code: dataimport.CodeInvalidPayload, Detail: "Invalid query parameters.",
				Errors: []dataimport.FieldError{{Attr: "type", Code: dataimport.CodeInvalidChoice, Detail: fmt.Sprintf("%q is not a published event type.", t)}}}
		}
		out = append(out, e)
	}
	return out, nil
}

// FeedTail is the highest position numbered so far (0: none yet): a cursor
// from which a reader sees only events numbered after this call. Events
// committed but not yet numbered (the relay runs every 100 ms and waits for
// older transactions) come after it too.
func (db *DB) FeedTail(ctx context.Context) (int64, error) {
	var n sql.NullInt64
	if err := db.sql.QueryRowContext(ctx, `SELECT max(position) FROM import_process_events`).Scan(&n); err != nil {
		return 0, fmt.Errorf("event feed tail: %w", err)
	}
	return n.Int64, nil
}
