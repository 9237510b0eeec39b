package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Event is one entry of a process's timeline.
type Event struct {
	ID         int64           `json:"-"`
	Event      string          `json:"event"`
	OccurredAt time.Time       `json:"occurred_at"`
	Data       json.RawMessage `json:"data"`
}

// insertEvent is the one statement that writes a timeline entry; callers run
// it inside the transaction of the change it records.
const insertEvent = `INSERT INTO import_process_events (process_id, event, data) VALUES (?, ?, ?::jsonb)`

// recordEvent writes one event in tx.
func recordEvent(tx *gorm.DB, processID int64, event string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", event, err)
	}
	if err := tx.Exec(insertEvent, processID, event, string(b)).Error; err != nil {
		return fmt.Errorf("record %s event: %w", event, err)
	}
	return nil
}

// Events returns a process's whole timeline, oldest first.
func (db *DB) Events(ctx context.Context, processID int64) ([]Event, error) {
	var out []Event
	err := db.gorm.WithContext(ctx).Raw(`SELECT id, event, occurred_at, data FROM import_process_events
		WHERE process_id = ? ORDER BY id`, processID).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("process events: %w", err)
	}
	return out, nil
}

// EventsPage returns up to limit events of a process after the event with
// id after (0: from the first), oldest first: one page of the timeline.
func (db *DB) EventsPage(ctx context.Context, processID, after int64, limit int) ([]Event, error) {
	var out []Event
	err := db.readGorm.WithContext(ctx).Raw(`SELECT id, event, occurred_at, data FROM import_process_events
		WHERE process_id = ? AND id > ? ORDER BY id LIMIT ?`, processID, after, limit).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("process events page: %w", err)
	}
	return out, nil
}

// LatestEvent returns the newest event of a process (ok=false: none).
func (db *DB) LatestEvent(ctx context.Context, processID int64) (Event, bool, error) {
	var out []Event
	err := db.readGorm.WithContext(ctx).Raw(`SELECT id, event, occurred_at, data FROM import_process_events
		WHERE process_id = ? ORDER BY id DESC LIMIT 1`, processID).Scan(&out).Error
	if err != nil {
		return Event{}, false, fmt.Errorf("latest process event: %w", err)
	}
	if len(out) == 0 {
		return Event{}, false, nil
	}
	return out[0], true, nil
}

// errorData is the data of an errored event.
func errorData(attempt int, e *dataimport.Error) map[string]any {
	d := map[string]any{"attempt": attempt}
	if e != nil {
		d["error"] = e
	}
	return d
}
