package jobs

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
)

// ReconcileStore is what the reconciler reads and writes in Postgres.
type ReconcileStore interface {
	InProgressSince(ctx context.Context, before time.Time, limit int) ([]postgres.StuckProcess, error)
	FinishAttempt(ctx context.Context, processID int64, attempt int, outcome string, e *dataimport.Error) error
	StillInProgress(ctx context.Context, processID int64, attempt int) (bool, error)
	NotInProgress(ctx context.Context, ids []int64) ([]int64, error)
}

// EmailOutbox lists welcome e-mails still unsent after a while.
type EmailOutbox interface {
	UnsentWelcomeEmails(ctx context.Context, olderThan time.Duration, limit int) ([]int64, error)
}

// SlotSweeper is the semaphore as the reconciler uses it.
type SlotSweeper interface {
	Slots
	Holders(ctx context.Context) ([]string, error)
}

// TaskLookup asks asynq whether a task still exists.
type TaskLookup interface {
	GetTaskInfo(queue, id string) (*asynq.TaskInfo, error)
}

// Reconciler makes Postgres' view of work in progress true again after Redis
// lost it (restart without persistence, FLUSHALL, failover): a process
// IN_PROGRESS whose task asynq no longer knows is enqueued again. Every
// worker runs one; task IDs make their overlapping work harmless.
type Reconciler struct {
	Store  ReconcileStore
	Tasks  TaskLookup
	Queue  Enqueuer
	Slots  SlotSweeper
	Notify Publisher
	Emails EmailOutbox // nil: e-mails are not reconciled
	Log    *slog.Logger
	Every  time.Duration // how often to look
	Grace  time.Duration // how long a process may be IN_PROGRESS before we look at its task
	Batch  int

	suspects map[int64]bool // idle slot holders seen on the last pass
}

// Run reconciles until ctx ends.
func (r *Reconciler) Run(ctx context.Context) {
	t := time.NewTicker(r.Every)
	defer t.Stop()
	for {
		if n, err := r.Once(ctx); err != nil {
			r.Log.WarnContext(ctx, "reconcile failed", "err", err.Error())
		} else if n > 0 {
			r.Log.InfoContext(ctx, "reconciled lost account jobs", "requeued", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Once does one pass and returns how many jobs it enqueued again.
func (r *Reconciler) Once(ctx context.Context) (int, error) {
	batch := r.Batch
	if batch <= 0 {
		batch = 500
	}
	stuck, err := r.Store.InProgressSince(ctx, time.Now().Add(-r.Grace), batch)
	if err != nil {
		return 0, err
	}
	requeued := 0
	for _, sp := range stuck {
		p := queue.CreateAccount{ProcessID: sp.ProcessID, SupplierID: sp.SupplierID, ExternalAccountNumber: sp.ExternalAccountNumber,
			Attempt: sp.Attempt, DryRun: sp.DryRun}
		info, err := r.Tasks.GetTaskInfo(queue.QueueAccounts, p.TaskID())
		switch {
		case errors.Is(err, asynq.ErrTaskNotFound), errors.Is(err, asynq.ErrQueueNotFound):
			// Lost: hold the slot again (uncapped: it is already in
			// progress) and put the job back, unless it finished meanwhile.
			live, err := r.holdSlotIfLive(ctx, p)
			if err != nil || !live {
				if err != nil {
					return requeued, err
				}
				continue
			}
			if err := r.Queue.Enqueue(ctx, p); err != nil {
				return requeued, err
			}
			requeued++
		case err != nil:
			return requeued, err
		case info.State == asynq.TaskStateArchived:
			// Retries exhausted but the give-up was not recorded.
			if err := r.Store.FinishAttempt(ctx, p.ProcessID, p.Attempt, postgres.OutcomeFailed, errInternal); err != nil {
				return requeued, err
			}
			_ = r.Slots.Release(ctx, p.SlotHolder())
			_ = r.Notify.Publish(ctx, p.ProcessID)
		default:
			// Queued or running: keep its slot alive while it waits.
			if ok, err := r.Slots.Renew(ctx, p.SlotHolder()); err == nil && !ok {
				if _, err := r.holdSlotIfLive(ctx, p); err != nil {
					return requeued, err
				}
			}
		}
	}
	if err := r.sweepSlots(ctx); err != nil {
		return requeued, err
	}
	return requeued, r.resendEmails(ctx, batch)
}

// sweepSlots frees slots whose process is not in progress, when that was
// already so on the previous pass. Normally every job releases its own
// slot; this catches a release lost to a Redis or network blip before the
// lease would. Waiting a pass spares the instant between the API taking a
// slot and marking its process IN_PROGRESS.
func (r *Reconciler) sweepSlots(ctx context.Context) error {
	holders, err := r.Slots.Holders(ctx)
	if err != nil {
		return err
	}
	var ids []int64
	for _, h := range holders {
		if id, ok := queue.HolderProcess(h); ok {
			ids = append(ids, id)
		}
	}
	idle, err := r.Store.NotInProgress(ctx, ids)
	if err != nil {
		return err
	}
	suspects := make(map[int64]bool, len(idle))
	for _, id := range idle {
		if r.suspects[id] {
			if err := r.Slots.Release(ctx, queue.SlotHolder(id)); err != nil {
				return err
			}
			continue
		}
		suspects[id] = true
	}
	r.suspects = suspects
	return nil
}

// resendEmails re-enqueues welcome e-mails whose task was lost after the
// account committed, and those claimed long ago and still sending (the
// handler flags them unknown once stale; it never sends them again). Task
// IDs dedupe those still queued.
func (r *Reconciler) resendEmails(ctx context.Context, batch int) error {
	if r.Emails == nil {
		return nil
	}
	ids, err := r.Emails.UnsentWelcomeEmails(ctx, 4*r.Grace, batch)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := r.Queue.Enqueue(ctx, queue.WelcomeEmail{EmailID: id}); err != nil {
			return err
		}
	}
	return nil
}

// holdSlotIfLive takes the process's slot and keeps it only if the attempt is
// still in progress. Checking after taking it closes the race with a job
// that finishes meanwhile: its release comes after its commit, so after our
// check, so after our acquire.
func (r *Reconciler) holdSlotIfLive(ctx context.Context, p queue.CreateAccount) (bool, error) {
	if _, err := r.Slots.Acquire(ctx, p.SlotHolder(), 0); err != nil {
		return false, err
	}
	live, err := r.Store.StillInProgress(ctx, p.ProcessID, p.Attempt)
	if err != nil || !live {
		_ = r.Slots.Release(ctx, p.SlotHolder())
		return false, err
	}
	return true, nil
}
