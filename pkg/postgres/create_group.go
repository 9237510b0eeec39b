package postgres

import (
	"context"
	"sync"
	"sync/atomic"
)

// Under load a per-account creation costs Postgres mostly its commit (the
// WAL flush), not its rows. createGroup lets concurrent CreateAccount calls
// share one transaction (group commit), the way bulk rounds do: a caller
// queues its account, and whoever holds one of the flusher slots takes
// everything queued at that moment (up to maxBatch) and creates it in one
// createAccountsOnce. A lone account is created at once, so nothing waits on
// a timer; batches form only while earlier transactions are in Postgres.
// A batch that fails hands each account back to its caller to be created
// alone, so a bad account fails alone and its neighbours are created.
type createGroup struct {
	create   func(ctx context.Context, ins []CreationInput) ([]CreationResult, error)
	alone    func(ctx context.Context, in CreationInput) (CreationResult, error)
	maxBatch int
	flushers chan struct{} // a slot per creation transaction under way

	mu    sync.Mutex
	queue []*createCall
}

type createCall struct {
	ctx  context.Context
	in   CreationInput
	done chan createReply // buffered: the flusher never blocks on it
}

// createReply is a caller's outcome; alone asks the caller to create its
// account on its own (its batch failed).
type createReply struct {
	res   CreationResult
	err   error
	alone bool
}

// groupMaxBatch bounds the accounts of one shared transaction: enough to
// spread a commit over a worker's concurrent tasks, small enough that the
// row locks and the writer slot are held for one short round trip.
const groupMaxBatch = 32

// groupCommits and groupAccounts count the shared transactions committed
// and their accounts, groupFallbacks those that failed and handed their
// accounts back to be created alone.
var groupCommits, groupAccounts, groupFallbacks atomic.Int64

func newCreateGroup(flushers, maxBatch int, create func(context.Context, []CreationInput) ([]CreationResult, error),
	alone func(context.Context, CreationInput) (CreationResult, error)) *createGroup {
	return &createGroup{create: create, alone: alone, maxBatch: maxBatch, flushers: make(chan struct{}, max(1, flushers))}
}

// run queues in and returns its outcome once its transaction has ended. If
// ctx ends while the account is still queued, it is withdrawn and never
// written; once its transaction has started, run waits for the outcome
// (the transaction is cancelled only when every caller in it has left).
func (g *createGroup) run(ctx context.Context, in CreationInput) (CreationResult, error) {
	call := &createCall{ctx: ctx, in: in, done: make(chan createReply, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, call)
	g.mu.Unlock()
	return g.await(ctx, call)
}

// runAll is run for several accounts queued at once, so that the first
// free flusher takes them all into one transaction; each still has its own
// outcome (a failed batch sends each to be created alone).
func (g *createGroup) runAll(ctx context.Context, ins []CreationInput) ([]CreationResult, []error) {
	calls := make([]*createCall, len(ins))
	g.mu.Lock()
	for i, in := range ins {
		calls[i] = &createCall{ctx: ctx, in: in, done: make(chan createReply, 1)}
	}
	g.queue = append(g.queue, calls...)
	g.mu.Unlock()
	res := make([]CreationResult, len(ins))
	errs := make([]error, len(ins))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() { res[i], errs[i] = g.await(ctx, c) })
	}
	wg.Wait()
	return res, errs
}

// await waits for a queued call's outcome, flushing batches itself while
// a flusher slot is free.
func (g *createGroup) await(ctx context.Context, call *createCall) (CreationResult, error) {
	in := call.in
	for {
		// A ready answer wins over a free flusher slot (select picks at
		// random), so a caller does not go on to write others' accounts.
		select {
		case r := <-call.done:
			return g.reply(ctx, in, r)
		default:
		}
		select {
		case r := <-call.done:
			return g.reply(ctx, in, r)
		case <-ctx.Done():
			if g.withdraw(call) {
				return CreationResult{}, ctx.Err()
			}
			return g.reply(ctx, in, <-call.done) // in a transaction already: its outcome is the truth
		case g.flushers <- struct{}{}:
			batch := g.take()
			if len(batch) > 0 {
				g.flush(batch)
			}
			<-g.flushers
			if len(batch) == 0 {
				// Our account is in a transaction someone else is running.
				return g.reply(ctx, in, <-call.done)
			}
		}
	}
}

func (g *createGroup) reply(ctx context.Context, in CreationInput, r createReply) (CreationResult, error) {
	if r.alone {
		return g.alone(ctx, in)
	}
	return r.res, r.err
}

// take removes up to maxBatch queued calls, oldest first, at most one per
// process: the attempt guard counts rows per process, so a repeat of one
// (two runs of the same attempt) waits for a later transaction, where the
// guard finds it already created.
func (g *createGroup) take() []*createCall {
	g.mu.Lock()
	defer g.mu.Unlock()
	seen := make(map[int64]bool, min(len(g.queue), g.maxBatch))
	var batch []*createCall
	rest := g.queue[:0]
	for _, c := range g.queue {
		if len(batch) == g.maxBatch || seen[c.in.ProcessID] {
			rest = append(rest, c)
			continue
		}
		seen[c.in.ProcessID] = true
		batch = append(batch, c)
	}
	clear(g.queue[len(rest):])
	g.queue = rest
	return batch
}

func (g *createGroup) withdraw(call *createCall) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, c := range g.queue {
		if c == call {
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			return true
		}
	}
	return false
}

// flush creates a batch in one transaction and answers every caller.
func (g *createGroup) flush(batch []*createCall) {
	ctx, stop := sharedContext(batch)
	defer stop()
	if len(batch) == 1 {
		res, err := g.alone(ctx, batch[0].in)
		batch[0].done <- createReply{res: res, err: err}
		return
	}
	ins := make([]CreationInput, len(batch))
	for i, c := range batch {
		ins[i] = c.in
	}
	out, err := g.create(ctx, ins)
	if err != nil {
		// Whatever failed (a bad account, a stale attempt, a paused
		// supplier, a platform-number collision), each caller finds out
		// for its own account alone, with its own context.
		groupFallbacks.Add(1)
		for _, c := range batch {
			c.done <- createReply{alone: true}
		}
		return
	}
	groupCommits.Add(1)
	groupAccounts.Add(int64(len(batch)))
	for i, c := range batch {
		c.done <- createReply{res: out[i]}
	}
}

// sharedContext is the context of a batch's transaction: it keeps the
// callers' values and ends only when every caller's context has ended, so
// no one caller's cancellation undoes the others' accounts, and a batch
// whose callers have all gone does not run on.
func sharedContext(batch []*createCall) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(batch[0].ctx))
	left := atomic.Int64{}
	left.Store(int64(len(batch)))
	stops := make([]func() bool, len(batch))
	for i, c := range batch {
		stops[i] = context.AfterFunc(c.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, s := range stops {
			s()
		}
		cancel()
	}
}

// CreationGroupStats reports, since the process started, the shared
// creation transactions committed and the accounts they carried (their
// ratio is the group commit's batch size; the worker's metrics).
func CreationGroupStats() (transactions, accounts int64) {
	return groupCommits.Load(), groupAccounts.Load()
}
