package jobs

import (
	"context"
	"sync"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// A per-account creation task takes along other started per-account
// attempts whose own tasks are still queued, and creates them in its
// transaction: group commit among concurrent tasks alone makes batches of
// about two accounts at the default of two tasks a core, while partners'
// creates queue behind them. Nothing about a companion changes but who
// creates it: the same load, revalidation, vendor check and creation
// transaction, with the attempt guard deciding once. Its own task, when it
// runs, finds the account created and ends as an earlier run of it would
// (outcome, slot, waiters). A companion that cannot be created here for any
// reason (invalid, refused, paused, stale) is left alone: its own task
// meets the same reason and records it, so every failure has one path.

// maxCompanions bounds the attempts one task takes along: with its own,
// one group-commit batch.
const maxCompanions = 31

// together knows which processes this worker's creation tasks are running
// or have taken along, so that no process is in two of its transactions at
// once: a task waits while its process is another task's companion, and a
// task never takes along a process whose own task is running here. Across
// worker replicas the attempt guard decides (the one that loses retries
// its accounts alone); taking the newest keeps that rare.
type together struct {
	mu      sync.Mutex
	running map[int64]int
	taken   map[int64]chan struct{}
}

// enter marks a task of processID running, after waiting for any task that
// has it as a companion to be done with it. leave ends the mark.
func (t *together) enter(ctx context.Context, processID int64) (leave func(), err error) {
	for {
		t.mu.Lock()
		ch, busy := t.taken[processID]
		if !busy {
			if t.running == nil {
				t.running = map[int64]int{}
			}
			t.running[processID]++
			t.mu.Unlock()
			return func() {
				t.mu.Lock()
				if t.running[processID]--; t.running[processID] == 0 {
					delete(t.running, processID)
				}
				t.mu.Unlock()
			}, nil
		}
		t.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// busy lists the processes running or taken here.
func (t *together) busy() []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]int64, 0, len(t.running)+len(t.taken))
	for id := range t.running {
		out = append(out, id)
	}
	for id := range t.taken {
		out = append(out, id)
	}
	return out
}

// take marks as companions those of ids neither running nor taken here;
// release gives them back and wakes their tasks if they wait.
func (t *together) take(ids []int64) (taken []int64, release func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.taken == nil {
		t.taken = map[int64]chan struct{}{}
	}
	ch := make(chan struct{})
	for _, id := range ids {
		if _, ok := t.running[id]; ok {
			continue
		}
		if _, ok := t.taken[id]; ok {
			continue
		}
		t.taken[id] = ch
		taken = append(taken, id)
	}
	return taken, func() {
		t.mu.Lock()
		for _, id := range taken {
			delete(t.taken, id)
		}
		t.mu.Unlock()
		close(ch)
	}
}

// createTogether creates own (already validated and checked with its
// vendor) with the companions it can take along, and returns own's outcome
// as CreateAccount would.
func (h *CreateAccountHandler) createTogether(ctx context.Context, own postgres.CreationInput) (postgres.CreationResult, error) {
	ids, err := h.Store.AwaitingCreation(ctx, h.together.busy(), maxCompanions)
	if err != nil {
		h.Log.WarnContext(ctx, "attempts awaiting creation not read; creating alone", "err", err.Error())
	}
	if len(ids) == 0 {
		return h.Store.CreateAccount(ctx, own)
	}
	taken, release := h.together.take(ids)
	defer release()
	var ins []postgres.CreationInput
	if len(taken) > 0 { // all may be running or taken here already
		ins = h.companionInputs(ctx, taken, own.Now)
	}
	if len(ins) == 0 {
		return h.Store.CreateAccount(ctx, own)
	}
	res, errs := h.Store.CreateAccounts(ctx, append(ins, own))
	for i, in := range ins {
		if errs[i] != nil || res[i].AlreadyCreated {
			continue // left to its own task, which meets the same answer
		}
		h.companionCreated(ctx, in, res[i])
	}
	n := len(ins)
	return res[n], errs[n]
}

// companionInputs loads and prepares the taken processes as the task of
// each would (run), keeping those that may be created now.
func (h *CreateAccountHandler) companionInputs(ctx context.Context, ids []int64, now time.Time) []postgres.CreationInput {
	lps, err := h.Store.LoadManyForCreation(ctx, ids)
	if err != nil {
		h.Log.WarnContext(ctx, "companions not loaded; creating alone", "err", err.Error())
		return nil
	}
	out := make([]*postgres.CreationInput, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		lp, ok := lps[id]
		proc := lp.Process
		if !ok || proc.Status != dataimport.StatusInProgress || proc.V2Status != dataimport.V2InProgress || proc.Imported() ||
			proc.DryRun || lp.Supplier.Status != dataimport.SupplierOngoing {
			continue
		}
		wg.Go(func() {
			acc, err := h.revalidate(ctx, lp, now)
			if err != nil {
				return
			}
			instructions, refusal, err := h.verifyInstructions(ctx, acc)
			if err != nil || refusal != nil {
				return
			}
			out[i] = &postgres.CreationInput{ProcessID: id, Attempt: proc.Attempt, Supplier: lp.Supplier, Account: acc, Now: now,
				Instructions: instructions}
		})
	}
	wg.Wait()
	var ins []postgres.CreationInput
	for _, in := range out {
		if in != nil {
			ins = append(ins, *in)
		}
	}
	return ins
}

// companionCreated does for a companion what its task does after the
// commit, and wakes the partner's create waiting on it; its task, when it
// runs, releases its slot and counts its outcome.
func (h *CreateAccountHandler) companionCreated(ctx context.Context, in postgres.CreationInput, res postgres.CreationResult) {
	h.created(ctx, in.Supplier.Code, in.ProcessID, res, "taken_along", true)
	if err := h.Notify.Publish(ctx, in.ProcessID); err != nil {
		h.Log.WarnContext(ctx, "outcome not published; waiters poll", "process_id", in.ProcessID, "err", err.Error())
	}
}
