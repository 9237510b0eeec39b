package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"
)

// FeedChannel is notified (payload: the highest position) after the relay
// numbers events, so feed long-polls and webhook dispatchers wake at once.
const FeedChannel = "dataimport_feed"

// relayLock is the advisory lock that lets one relay at a time number events.
const relayLock = 0x64696576 // "diev"

// PositionEvents numbers up to limit committed events in commit-safe order
// (see migration 00010) and returns how many it numbered. Only events whose
// transaction ended before every transaction still running are taken, so a
// slower transaction's event is numbered after it commits, never skipped.
// Several processes may call it at once: one numbers, the others return 0.
func (db *DB) PositionEvents(ctx context.Context, limit int) (int, error) {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("position events: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var locked bool
	if err := tx.QueryRowContext(ctx, `SELECT pg_try_advisory_xact_lock($1)`, relayLock).Scan(&locked); err != nil {
		return 0, fmt.Errorf("position events: %w", err)
	}
	if !locked {
		return 0, nil
	}
	var n int
	var last *int64
	err = tx.QueryRowContext(ctx, `
		WITH next AS (
			SELECT id, nextval('import_process_events_position_seq') AS pos FROM (
				SELECT id FROM import_process_events
				 WHERE position IS NULL AND xid < pg_snapshot_xmin(pg_current_snapshot())
				 ORDER BY id LIMIT $1) ready
		), done AS (
			UPDATE import_process_events e SET position = next.pos FROM next WHERE e.id = next.id RETURNING e.position
		)
		SELECT count(*), max(position) FROM done`, limit).Scan(&n, &last)
	if err != nil {
		return 0, fmt.Errorf("position events: %w", err)
	}
	if n > 0 {
		if _, err := tx.ExecContext(ctx, `SELECT pg_notify($1, $2)`, FeedChannel, strconv.FormatInt(*last, 10)); err != nil {
			return 0, fmt.Errorf("position events: notify: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("position events: %w", err)
	}
	return n, nil
}

// RunEventRelay numbers events every `every` until ctx ends, draining the
// backlog in batches. Every API and worker process runs one; the advisory
// lock makes them take turns.
func (db *DB) RunEventRelay(ctx context.Context, every time.Duration, log *slog.Logger) {
	const batch = 1000
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		for {
			n, err := db.PositionEvents(ctx, batch)
			if err != nil {
				if ctx.Err() == nil {
					log.WarnContext(ctx, "event relay failed; retrying", "err", err.Error())
				}
				break
			}
			if n < batch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
