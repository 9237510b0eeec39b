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
//
// Accounts created one at a time (v1, v2) are read back by the same writer
// right after their creation commits: a partner polls such an account until
// it is created and reads it once more, and that read then finds the
// digest kept instead of reading fifteen tables inside the request. The
// writer reads them back a batch at a time in the worker, where it costs a
// fraction of what a single read in a request does. A bulk job's accounts
// are not: their digests are read 500 at a time with the job's results.

// maxPendingDigests bounds what waits to be kept; beyond it digests are
// not kept (read again next time).
const maxPendingDigests = 10000

type digestKeeper struct {
	mu      sync.Mutex
	pending map[int64]LandedAccount
	created map[int64]struct{} // accounts to read back, then keep
	running bool
	closing bool          // Close: what is pending is dropped, nothing waits
	stop    chan struct{} // closed by Close to end the writer's wait
	done    sync.WaitGroup
}

// keepCreated queues accounts just created to be read back and kept.
func (db *DB) keepCreated(ids ...int64) {
	k := &db.keeper
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.created == nil {
		k.created = map[int64]struct{}{}
	}
	for _, id := range ids {
		if len(k.created) >= maxPendingDigests {
			break
		}
		k.created[id] = struct{}{}
	}
	db.startKeeperLocked()
}

// startKeeperLocked starts the writer unless it runs or nothing waits; the
// keeper's mutex is held.
func (db *DB) startKeeperLocked() {
	k := &db.keeper
	if k.running || k.closing || len(k.pending)+len(k.created) == 0 {
		return
	}
	k.running = true
	if k.stop == nil {
		k.stop = make(chan struct{})
	}
	k.done.Add(1)
	go db.keepPending(k.stop)
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
	db.startKeeperLocked()
}

// keepPending writes what is pending until nothing is.
func (db *DB) keepPending(stop <-chan struct{}) {
	k := &db.keeper
	defer k.done.Done()
	for {
		// Let a batch gather: one read-back of many accounts costs a
		// fraction per account of one read-back each.
		select {
		case <-time.After(keepEvery):
		case <-stop:
		}
		k.mu.Lock()
		batch, created := k.pending, k.created
		k.pending, k.created = nil, nil
		if k.closing {
			batch, created = nil, nil
		}
		k.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := db.keepBatch(ctx, batch, created); err != nil {
			slog.Warn("landed digests not kept; the next read computes them again", "accounts", len(batch)+len(created), "error", err)
		}
		cancel()
		k.mu.Lock()
		if k.closing || len(k.pending)+len(k.created) == 0 {
			k.running = false
			k.mu.Unlock()
			return
		}
		k.mu.Unlock()
	}
}

// keepBatch reads back the created accounts (from the primary, which has
// them; in batches of digestReadBatch) and keeps their digests with batch.
func (db *DB) keepBatch(ctx context.Context, batch map[int64]LandedAccount, created map[int64]struct{}) error {
	if batch == nil {
		batch = map[int64]LandedAccount{}
	}
	ids := make([]int64, 0, len(created))
	for id := range created {
		if _, ok := batch[id]; !ok {
			ids = append(ids, id)
		}
	}
	for len(ids) > 0 {
		n := min(len(ids), digestReadBatch)
		landed, err := db.readLandedFrom(ctx, db.sql, `WHERE a.id = ANY($1::bigint[])`, ids[:n])
		if err != nil {
			return err
		}
		ids = ids[n:]
		for id, l := range landed {
			batch[id] = l
		}
	}
	if len(batch) == 0 {
		return nil
	}
	return db.keepDigests(ctx, batch)
}

// keepEvery is how long the writer lets digests gather before a batch.
const keepEvery = 250 * time.Millisecond

// digestReadBatch is how many accounts one read-back statement takes.
const digestReadBatch = 500

// waitKept waits until the digests queued so far are kept (tests).
func (db *DB) waitKept() { db.keeper.done.Wait() }

// stopKeeping drops what waits to be kept and waits for a batch under way
// (Close: the digests are read again by the next read).
func (db *DB) stopKeeping() {
	db.keeper.mu.Lock()
	if !db.keeper.closing {
		db.keeper.closing = true
		if db.keeper.stop != nil {
			close(db.keeper.stop)
		}
	}
	db.keeper.mu.Unlock()
	db.keeper.done.Wait()
}

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
