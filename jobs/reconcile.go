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
	InProgressSince(ctx context.Context, before time.Time, after postgres.StuckProcess, limit int) ([]postgres.StuckProcess, error)
	FinishAttempt(ctx context.Context, processID int64, attempt int, outcome string, e *dataimport.Error) error
	StillInProgress(ctx context.Context, processID int64, attempt int) (bool, error)
	NotInProgress(ctx context.Context, owners []queue.SlotRef) ([]queue.SlotRef, error)
}

// EmailOutbox lists welcome e-mails still unsent after a while.
type EmailOutbox interface {
	UnsentWelcomeEmails(ctx context.Context, olderThan time.Duration, limit int) ([]int64, error)
}

// SlotSweeper is the semaphore as the reconciler uses it.
type SlotSweeper interface {
	Slots
	Holders(ctx context.Context) ([]string, error)
	RenewMany(ctx context.Context, holders []string) (missing []string, err error)
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
	Jobs   JobWaker    // nil: bulk jobs are not reconciled
	Log    *slog.Logger
	Every  time.Duration // how often to look
	Grace  time.Duration // how long a process may be IN_PROGRESS before we look at its task, and a slot idle before it is freed
	Batch  int
	// LostUploadAfter is how long a RECEIVING job may go without a
	// heartbeat before it is failed (UPLOAD_LOST_AFTER); 0: LostUploadAfter.
	LostUploadAfter time.Duration

	suspects map[queue.SlotRef]time.Time // idle slot owners seen on the last pass, and since when
	cursor   postgres.StuckProcess       // where the next pass's scan of processes in progress resumes
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

// Once does one pass and returns how many jobs it enqueued again. Each pass
// looks at up to Batch processes in progress, resuming where the last pass
// stopped, so every one of them is looked at however many there are; and it
// renews every live slot, whatever the batch.
func (r *Reconciler) Once(ctx context.Context) (int, error) {
	batch := r.Batch
	if batch <= 0 {
		batch = 500
	}
	stuck, err := r.Store.InProgressSince(ctx, time.Now().Add(-r.Grace), r.cursor, batch)
	if err != nil {
		return 0, err
	}
	if len(stuck) < batch {
		r.cursor = postgres.StuckProcess{} // reached the end: start again next pass
	} else {
		r.cursor = stuck[len(stuck)-1]
	}
	requeued := 0
	var waiting []queue.CreateAccount
	for _, sp := range stuck {
		p := queue.CreateAccount{ProcessID: sp.ProcessID, SupplierID: sp.SupplierID, ExternalAccountNumber: sp.ExternalAccountNumber,
			Attempt: sp.Attempt, DryRun: sp.DryRun, OrganisationID: sp.OrganisationID}
		if sp.WindowStart != nil {
			p.NotBefore = *sp.WindowStart
		}
		started := sp.V2Status == dataimport.V2InProgress
		info, err := r.Tasks.GetTaskInfo(queue.QueueAccounts, p.TaskID())
		switch {
		case (errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound)) && !started:
			// A scheduled attempt lost from Redis: schedule it again with its
			// own window; it holds no slot until it starts. A window that
			// ended meanwhile ends it as expired when it runs.
			if err := r.Queue.Enqueue(ctx, p); err != nil {
				return requeued, err
			}
			requeued++
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
		case started:
			waiting = append(waiting, p)
		}
	}
	if err := r.keepSlots(ctx, waiting); err != nil {
		return requeued, err
	}
	if err := r.sweepSlots(ctx); err != nil {
		return requeued, err
	}
	if err := r.wakeJobs(ctx); err != nil {
		return requeued, err
	}
	return requeued, r.resendEmails(ctx, batch)
}

// keepSlots holds again the slots of started attempts (queued or running)
// that lost theirs (Redis restarted or flushed), so the count of accounts in progress
// stays true.
func (r *Reconciler) keepSlots(ctx context.Context, waiting []queue.CreateAccount) error {
	if len(waiting) == 0 {
		return nil
	}
	byHolder := make(map[string]queue.CreateAccount, len(waiting))
	holders := make([]string, 0, len(waiting))
	for _, p := range waiting {
		byHolder[p.SlotHolder()] = p
		holders = append(holders, p.SlotHolder())
	}
	missing, err := r.Slots.RenewMany(ctx, holders)
	if err != nil {
		return err
	}
	for _, h := range missing {
		if _, err := r.holdSlotIfLive(ctx, byHolder[h]); err != nil {
			return err
		}
	}
	return nil
}

// sweepSlots renews every slot whose attempt is in progress (the leases of
// jobs waiting in a long queue must not run out) and frees slots whose
// attempt has not been in progress on any pass for at least Grace.
// Normally every job releases its own slot; this catches a release lost to
// a Redis or network blip before the lease would. Waiting Grace, not one
// pass, spares the moment between taking a slot and starting its attempt
// (the API's one statement, a bulk job's batch of them), however slow a
// loaded machine makes it: freed then, the slot would go to another account
// while this one starts anyway, and the cap would be exceeded.
// A slot names its attempt, so a newer attempt's slot is never freed here.
func (r *Reconciler) sweepSlots(ctx context.Context) error {
	holders, err := r.Slots.Holders(ctx)
	if err != nil {
		return err
	}
	owners := make([]queue.SlotRef, 0, len(holders))
	holderOf := make(map[queue.SlotRef]string, len(holders))
	for _, h := range holders {
		if ref, ok := queue.HolderRef(h); ok {
			owners = append(owners, ref)
			holderOf[ref] = h
		}
	}
	idle, err := r.Store.NotInProgress(ctx, owners)
	if err != nil {
		return err
	}
	now := time.Now()
	suspects := make(map[queue.SlotRef]time.Time, len(idle))
	for _, ref := range idle {
		since, seen := r.suspects[ref]
		if seen && now.Sub(since) >= r.Grace {
			if err := r.Slots.Release(ctx, holderOf[ref]); err != nil {
				return err
			}
		} else {
			if !seen {
				since = now
			}
			suspects[ref] = since
		}
		delete(holderOf, ref)
	}
	r.suspects = suspects
	live := make([]string, 0, len(holderOf))
	for _, h := range holderOf {
		live = append(live, h)
	}
	_, err = r.Slots.RenewMany(ctx, live)
	return err
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
	if _, err := r.Slots.AcquireFor(ctx, p.SlotHolder(), p.Owner(), queue.Caps{}); err != nil {
		return false, err
	}
	live, err := r.Store.StillInProgress(ctx, p.ProcessID, p.Attempt)
	if err != nil || !live {
		_ = r.Slots.Release(ctx, p.SlotHolder())
		return false, err
	}
	return true, nil
}
