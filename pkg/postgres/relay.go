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
	var xmin int64
	floor := db.relayFloor.Load()
	err = tx.QueryRowContext(ctx, positionEventsSQL, limit, strconv.FormatUint(floor, 10)).Scan(&n, &last, &xmin)
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
	if n < limit {
		// Every committed event below xmin is numbered now: the next run
		// starts its scan there.
		db.relayFloor.Store(uint64(xmin))
	}
	return n, nil
}

// positionEventsSQL numbers up to $1 events whose transaction ended before
// every transaction still running (xid below the snapshot's xmin), in id
// order, and returns how many, the highest position and that xmin.
//
// The scan starts at $2, the xmin of this process's last run that numbered
// every event it could: an event not numbered then was written by a
// transaction at or above it (below it, the transaction had ended and its
// events were numbered, or it rolled back). Without that floor the scan
// walked the unpositioned index from its first entry, through one dead
// entry for every event ever numbered until a vacuum removed them: its
// cost grew with the event log (with autovacuum off, it was among the
// busiest statements of a 1.5 million-account run).
const positionEventsSQL = `
		WITH snap AS (
			SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin
		), ready AS MATERIALIZED (
			SELECT e.id FROM import_process_events e, snap
			 WHERE e.position IS NULL AND e.xid >= $2::text::xid8 AND e.xid < snap.xmin
		), next AS (
			SELECT id, nextval('import_process_events_position_seq') AS pos FROM (SELECT id FROM ready ORDER BY id LIMIT $1) r
		), done AS (
			UPDATE import_process_events e SET position = next.pos FROM next WHERE e.id = next.id RETURNING e.position
		)
		SELECT count(*), max(position), (SELECT xmin::text::bigint FROM snap) FROM done`

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
