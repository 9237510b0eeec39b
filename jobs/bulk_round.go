package jobs

import (
	"context"
	"errors"
	"sync"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
)

// A bulk round's accounts are created in the background while the next
// round stages, starts and revalidates its lines: those steps keep one
// Postgres backend (or the worker's Go code) busy, and run serially they
// left the CPU 15-20% idle through a bulk run (10-11% with the overlap).
// A job has at most one round creating at a time, under its turn
// (keepTurn), and the round is settled (its lines and the job's counters)
// before any step that looks at the whole job, waits, or hands the job
// over.

// roundCreations is one round's creation transactions under way.
type roundCreations struct {
	cands []postgres.JobCandidate
	done  chan struct{}
	err   error
}

// roundInputs is a round's started attempts and what will be created of
// them (attempts that failed revalidation are already recorded as failed).
type roundInputs struct {
	cands []postgres.JobCandidate
	ins   []postgres.CreationInput
}

// prepareRound loads and revalidates the attempts start began; their
// slots are given back if it fails.
func (h *BulkJobHandler) prepareRound(ctx context.Context, job dataimport.Job, started []postgres.JobCandidate) (roundInputs, error) {
	ins, err := h.prepare(ctx, job, started)
	if err != nil {
		h.release(ctx, started, 0)
		return roundInputs{}, err
	}
	return roundInputs{cands: started, ins: ins}, nil
}

// launchRound creates the round's accounts in the background; their slots
// are given back when the creations end.
func (h *BulkJobHandler) launchRound(ctx context.Context, job dataimport.Job, r roundInputs, createN, parallel int) *roundCreations {
	c := &roundCreations{cands: r.cands, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer h.release(ctx, r.cands, 0)
		c.err = h.commit(ctx, job, r.ins, createN, parallel)
	}()
	return c
}

// finishRound waits for a round's creations (nil: none) and settles its
// lines, as a round did when it created them itself.
func (h *BulkJobHandler) finishRound(ctx context.Context, job dataimport.Job, c *roundCreations) error {
	if c == nil {
		return nil
	}
	<-c.done
	if c.err != nil {
		return c.err
	}
	if err := h.Store.ResolveJobLines(ctx, job.ID, lines(c.cands)); err != nil {
		return err
	}
	if !job.DryRun {
		h.Brakes.Check(ctx, job.SupplierID)
	}
	return nil
}

// keepTurn says whether a job keeps its turn into its next round: while
// its creations run on and no other job of this process waits for one.
func (h *BulkJobHandler) keepTurn(pending *roundCreations) bool {
	return pending != nil && h.waiting.Load() == 0
}

// createNow creates the accounts of attempts a dead run (or a pause) left
// in flight, in the foreground: their slots are held again first,
// uncapped, and given back at the end.
func (h *BulkJobHandler) createNow(ctx context.Context, job dataimport.Job, cands []postgres.JobCandidate, createN, parallel int) error {
	// Lines a pause held (PENDING) start again, unless it still holds.
	if err := h.Store.ResumeHeldJobAttempts(ctx, job.SupplierID, cands); err != nil {
		if errors.Is(err, postgres.ErrSupplierNotOngoing) {
			return nil
		}
		return err
	}
	if _, err := h.Slots.AcquireManyFor(ctx, holders(cands, 0), jobOwner(job), queue.Caps{}, false); err != nil {
		return err
	}
	defer h.release(ctx, cands, 0)
	ins, err := h.prepare(ctx, job, cands)
	if err != nil {
		return err
	}
	return h.commit(ctx, job, ins, createN, parallel)
}

// prepare revalidates started attempts as the per-account task does and
// asks the vendors about their payment instructions, never inside a
// transaction. What fails is recorded on the attempt; the rest is returned
// for creation. A vendor not answering leaves the line in flight, for the
// next round.
func (h *BulkJobHandler) prepare(ctx context.Context, job dataimport.Job, cands []postgres.JobCandidate) ([]postgres.CreationInput, error) {
	ids := make([]int64, len(cands))
	for i, c := range cands {
		ids[i] = c.ProcessID
	}
	lps, err := h.Store.LoadManyForCreation(ctx, ids)
	if err != nil {
		return nil, err
	}
	now := h.Now().UTC()
	var ins []postgres.CreationInput
	for _, c := range cands {
		lp, ok := lps[c.ProcessID]
		if !ok || lp.Process.Imported() || lp.Process.Status != dataimport.StatusInProgress || lp.Process.Attempt != c.Attempt {
			continue // ended meanwhile: its outcome is recorded
		}
		acc, err := revalidate(ctx, h.Store, h.Vendors, lp, now)
		if err != nil {
			e, retry := revalidationFailure(err)
			if retry != nil {
				return nil, retry
			}
			if err := h.Store.FinishAttempt(ctx, c.ProcessID, c.Attempt, postgres.OutcomeFailed, e); err != nil {
				return nil, err
			}
			continue
		}
		instructions, refusal, err := verifyInstructions(ctx, h.Vendors, h.Log, acc)
		switch {
		case err != nil:
			return nil, err
		case refusal != nil:
			if err := h.Store.FinishAttempt(ctx, c.ProcessID, c.Attempt, postgres.OutcomeFailed, refusal); err != nil {
				return nil, err
			}
			continue
		}
		ins = append(ins, postgres.CreationInput{ProcessID: c.ProcessID, Attempt: c.Attempt, DryRun: job.DryRun,
			Supplier: lp.Supplier, Account: acc, Now: now, Instructions: instructions})
	}
	return ins, nil
}

// commit creates the accounts in multi-account transactions, parallel at
// once, and records each outcome on its process (attempt rows); the job's
// lines follow them in ResolveJobLines.
func (h *BulkJobHandler) commit(ctx context.Context, job dataimport.Job, ins []postgres.CreationInput, createN, parallel int) error {
	if job.DryRun {
		// A dry run does everything and rolls back, one account at a time,
		// exactly as the per-account dry run.
		for _, in := range ins {
			_, err := h.Store.CreateAccount(ctx, in)
			if err := h.settle(ctx, in, postgres.CreationResult{}, err); err != nil {
				return err
			}
		}
		return nil
	}
	var groups [][]postgres.CreationInput
	for len(ins) > 0 {
		n := min(createN, len(ins))
		groups = append(groups, ins[:n])
		ins = ins[n:]
	}
	errs := make([]error, len(groups))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for gi, g := range groups {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			res, es := h.Store.CreateJobAccounts(ctx, job.ID, g)
			for i := range g {
				if err := h.settle(ctx, g[i], res[i], es[i]); err != nil && errs[gi] == nil {
					errs[gi] = err
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// settle records what one creation ended in, as the per-account task does:
// the database refusing the data fails the attempt; a stale attempt or a
// cancelled job needs nothing; other errors are returned (the line stays in
// flight and is created again).
func (h *BulkJobHandler) settle(ctx context.Context, in postgres.CreationInput, res postgres.CreationResult, err error) error {
	switch {
	case err == nil:
		for _, id := range res.WelcomeEmailIDs {
			if err := h.Queue.Enqueue(ctx, queue.WelcomeEmail{EmailID: id}); err != nil {
				h.Log.WarnContext(ctx, "welcome e-mail not enqueued; reconciler will retry", "email_id", id, "err", err.Error())
			}
		}
		return nil
	case errors.Is(err, postgres.ErrDryRun):
		return h.Store.FinishAttempt(ctx, in.ProcessID, in.Attempt, postgres.OutcomeDryRun, nil)
	case errors.Is(err, postgres.ErrStaleAttempt):
		return nil
	case errors.Is(err, postgres.ErrJobNotProcessing):
		return err
	case errors.Is(err, postgres.ErrSupplierNotOngoing):
		// Paused (or set Complete) before its batch: nothing was created;
		// the line is held until the supplier is Ongoing again.
		_, err := h.Store.HoldAttempt(ctx, in.ProcessID, in.Attempt)
		return err
	}
	if e := postgres.DataRefused(err); e != nil {
		h.Log.WarnContext(ctx, "account data refused by the database; attempt failed", "process_id", in.ProcessID, "err", err.Error())
		return h.Store.FinishAttempt(ctx, in.ProcessID, in.Attempt, postgres.OutcomeFailed, e)
	}
	return err
}
