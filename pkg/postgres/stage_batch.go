package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Staging is one conditional upsert and one insert per request, and under
// load its cost is the commit, not the rows. stageBatcher lets concurrent
// Stage calls share a statement and a commit (group commit): a caller queues
// its row, and whoever holds one of the few flusher slots takes everything
// queued and writes it in one statement. A lone request is written at once,
// so there is no added wait; batches form only while earlier ones are in
// Postgres. Every caller still gets its own answer, after the commit.
type stageBatcher struct {
	write    func(ctx context.Context, rows []stageRow) ([]stageOutcome, error)
	maxBatch int
	flushers chan struct{}  // a slot per concurrent statement
	observe  func(rows int) // told each committed statement's row count; may be nil

	mu    sync.Mutex
	queue []*stageCall
}

type stageRow struct {
	SupplierID int64
	External   string
	Payload    []byte
	// Line of the job being staged (stageRowsOn with a job): the payload is
	// read from the job's line inside the statement, not sent.
	Line int64
}

// stageKey is the account a row stages: one statement may touch it once.
type stageKey struct {
	supplierID int64
	external   string
}

func (r stageRow) key() stageKey { return stageKey{r.SupplierID, r.External} }

// stageOutcome is a row's result: Staged is false when the upsert refused
// it (imported, in progress or skipped).
type stageOutcome struct {
	Staged    bool
	ProcessID int64
	Version   int
}

type stageCall struct {
	row  stageRow
	done chan stageReply // buffered: the flusher never blocks on it
}

type stageReply struct {
	out stageOutcome
	err error
}

// stageTimeout bounds a shared statement, which no single caller's context
// may cancel: the others' rows ride on it.
const stageTimeout = 30 * time.Second

func newStageBatcher(flushers, maxBatch int, write func(context.Context, []stageRow) ([]stageOutcome, error)) *stageBatcher {
	return &stageBatcher{write: write, maxBatch: maxBatch, flushers: make(chan struct{}, flushers)}
}

// stage queues row and returns its outcome once it is committed (or failed).
// If ctx ends while the row is still queued, the row is withdrawn and never
// written; once its statement has started, stage waits for the outcome.
func (b *stageBatcher) stage(ctx context.Context, row stageRow) (stageOutcome, error) {
	call := &stageCall{row: row, done: make(chan stageReply, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, call)
	b.mu.Unlock()
	for {
		// An answer that is ready wins over a free flusher slot: select picks
		// at random, and this caller should not write others' rows first.
		select {
		case r := <-call.done:
			return r.out, r.err
		default:
		}
		select {
		case r := <-call.done:
			return r.out, r.err
		case <-ctx.Done():
			if b.withdraw(call) {
				return stageOutcome{}, fmt.Errorf("stage: %w", ctx.Err())
			}
			r := <-call.done // already being written: its outcome is the truth
			return r.out, r.err
		case b.flushers <- struct{}{}:
			batch := b.take()
			if len(batch) > 0 {
				b.flush(ctx, batch)
			}
			<-b.flushers
			if len(batch) == 0 {
				// Our row is in a statement someone else is running.
				r := <-call.done
				return r.out, r.err
			}
		}
	}
}

// take removes up to maxBatch queued calls, oldest first.
func (b *stageBatcher) take() []*stageCall {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := min(len(b.queue), b.maxBatch)
	batch := make([]*stageCall, n)
	copy(batch, b.queue)
	b.queue = append(b.queue[:0], b.queue[n:]...)
	return batch
}

func (b *stageBatcher) withdraw(call *stageCall) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, c := range b.queue {
		if c == call {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			return true
		}
	}
	return false
}

// flush writes a batch. One statement may touch an account once, so repeats
// of an account go to following statements, in arrival order: its versions
// stay in the order partners sent them.
func (b *stageBatcher) flush(ctx context.Context, batch []*stageCall) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stageTimeout)
	defer cancel()
	for len(batch) > 0 {
		seen := make(map[stageKey]bool, len(batch))
		var now, later []*stageCall
		for _, c := range batch {
			k := c.row.key()
			if seen[k] {
				later = append(later, c)
				continue
			}
			seen[k] = true
			now = append(now, c)
		}
		b.writeRound(ctx, now)
		batch = later
	}
}

// writeRound writes distinct accounts in one statement. If it fails, each
// row is tried alone, so one bad row cannot fail its neighbours.
func (b *stageBatcher) writeRound(ctx context.Context, calls []*stageCall) {
	rows := make([]stageRow, len(calls))
	for i, c := range calls {
		rows[i] = c.row
	}
	outs, err := b.write(ctx, rows)
	if err == nil {
		b.written(len(rows))
		for i, c := range calls {
			c.done <- stageReply{out: outs[i]}
		}
		return
	}
	if len(calls) == 1 {
		calls[0].done <- stageReply{err: err}
		return
	}
	for _, c := range calls {
		out, err := b.write(ctx, []stageRow{c.row})
		if err != nil {
			c.done <- stageReply{err: err}
			continue
		}
		b.written(1)
		c.done <- stageReply{out: out[0]}
	}
}

func (b *stageBatcher) written(rows int) {
	if b.observe != nil {
		b.observe(rows)
	}
}
