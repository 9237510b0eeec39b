package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Digests a read computed are kept behind the read's back: the status read
// answers at once, and one writer per process keeps what the reads
// computed in batches. Keeping is a write, and a write that waits for its
// commit to reach the disk held status reads behind the creations' WAL
// (make bench: p99 125-180 ms with the keeping inside the read). A digest
// that is not kept, or is lost in a crash (the writer does not wait for the
// commit to be flushed), is read back again by the next read: nothing
// depends on it being kept.

// maxPendingDigests bounds what waits to be kept; beyond it digests are
// not kept (read again next time).
const maxPendingDigests = 10000

type digestKeeper struct {
	mu      sync.Mutex
	pending map[int64]LandedAccount
	running bool
	done    sync.WaitGroup
}

// keepLater queues landed to be kept, starting the writer if none runs.
func (db *DB) keepLater(landed map[int64]LandedAccount) {
	k := &db.keeper
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.pending == nil {
		k.pending = map[int64]LandedAccount{}
	}
	for id, l := range landed {
		if len(k.pending) >= maxPendingDigests {
			break
		}
		if p, ok := k.pending[id]; !ok || p.Version < l.Version {
			k.pending[id] = l
		}
	}
	if k.running || len(k.pending) == 0 {
		return
	}
	k.running = true
	k.done.Add(1)
	go db.keepPending()
}

// keepPending writes what is pending until nothing is.
func (db *DB) keepPending() {
	k := &db.keeper
	defer k.done.Done()
	for {
		k.mu.Lock()
		batch := k.pending
		k.pending = nil
		if len(batch) == 0 {
			k.running = false
			k.mu.Unlock()
			return
		}
		k.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := db.keepDigests(ctx, batch); err != nil {
			slog.Warn("landed digests not kept; the next read computes them again", "accounts", len(batch), "error", err)
		}
		cancel()
	}
}

// waitKept waits until the digests queued so far are kept (Close, tests).
func (db *DB) waitKept() { db.keeper.done.Wait() }

// keepDigests keeps each account's digest with the version it was read at.
// A digest already kept for a later version stays: two readers may race,
// and the one that read the older snapshot must not win.
func (db *DB) keepDigests(ctx context.Context, landed map[int64]LandedAccount) error {
	ids := make([]int64, 0, len(landed))
	versions := make([]int64, 0, len(landed))
	digests := make([]string, 0, len(landed))
	for _, l := range landed {
		ids, versions, digests = append(ids, l.AccountID), append(versions, l.Version), append(digests, l.Digest)
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("keep landed digests: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `SET LOCAL synchronous_commit = off`); err != nil {
		return fmt.Errorf("keep landed digests: %w", err)
	}
	// Ordered by account, so two keepers never wait for each other in a circle.
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO landed_digests (account_id, version, digest)
		SELECT id, version, digest FROM unnest($1::bigint[], $2::bigint[], $3::text[]) AS u(id, version, digest)
		 ORDER BY id
		ON CONFLICT (account_id) DO UPDATE SET version = excluded.version, digest = excluded.digest
		 WHERE landed_digests.version < excluded.version`, ids, versions, digests); err != nil {
		return fmt.Errorf("keep landed digests: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("keep landed digests: %w", err)
	}
	return nil
}
