package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/payments"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
)

// BulkJobStore is what a bulk import job needs from Postgres.
type BulkJobStore interface {
	Catalogue
	ClaimJob(ctx context.Context, jobID int64, owner string, lease time.Duration) (dataimport.Job, bool, error)
	YieldJob(ctx context.Context, jobID int64, owner string) (int, error)
	StageJobChunk(ctx context.Context, job dataimport.Job, after int64, limit int) (int, int64, error)
	JobStartCandidates(ctx context.Context, jobID, after int64, limit int) ([]postgres.JobCandidate, error)
	BeginJobAttempts(ctx context.Context, job dataimport.Job, cands []postgres.JobCandidate) ([]postgres.JobCandidate, error)
	JobInFlight(ctx context.Context, jobID int64, limit int) ([]postgres.JobCandidate, error)
	LoadManyForCreation(ctx context.Context, processIDs []int64) (map[int64]postgres.LoadedProcess, error)
	CreateJobAccounts(ctx context.Context, jobID int64, ins []postgres.CreationInput) ([]postgres.CreationResult, []error)
	CreateAccount(ctx context.Context, in postgres.CreationInput) (postgres.CreationResult, error)
	FinishAttempt(ctx context.Context, processID int64, attempt int, outcome string, e *dataimport.Error) error
	ExpireJobLines(ctx context.Context, jobID int64, e *dataimport.Error) error
	ResolveJobLines(ctx context.Context, jobID int64, lines []int64) error
	FinishJobIfDone(ctx context.Context, jobID int64) (bool, error)
	SampleJobRate(ctx context.Context, jobID int64) error
	ConcurrencyLimit(ctx context.Context) (int, bool, error)
	// A Paused supplier holds the job; Complete ends what has not started (hold.go).
	SupplierStatusOf(ctx context.Context, supplierID int64) (dataimport.SupplierStatus, error)
	EndJobOnComplete(ctx context.Context, job dataimport.Job) error
	ResumeHeldJobAttempts(ctx context.Context, supplierID int64, cands []postgres.JobCandidate) error
	HoldAttempt(ctx context.Context, processID int64, attempt int) (bool, error)
	Caps(ctx context.Context, own queue.Owner) (queue.Caps, error)
}

// BatchSlots is the cluster-wide semaphore with batch acquisition (a bulk
// job takes a round's slots in one atomic step).
type BatchSlots interface {
	Slots
	AcquireManyFor(ctx context.Context, holders []string, own queue.Owner, caps queue.Caps, fair bool) (int, error)
	ReleaseMany(ctx context.Context, holders []string) error
}

// BulkJobHandler drains one bulk import job: it stages the job's lines in
// chunks with the per-account staging statement, starts their attempts
// under the cluster-wide cap and creates the accounts in multi-account
// transactions (a failed batch is retried account by account, so a bad
// account fails alone). Everything it does is recorded in Postgres as it
// goes, so any run can stop anywhere (SIGKILL, Redis loss) and the next one
// continues where it was, counting nothing twice.
type BulkJobHandler struct {
	Store BulkJobStore
	Slots BatchSlots
	Queue Enqueuer
	Log   *slog.Logger
	Now   func() time.Time
	// Vendors verifies the accounts' payment instructions before their
	// creation transaction, as for the per-account task (nil: none configured).
	Vendors payments.Lookup
	Lease   time.Duration // how long the job is held without a renewal (JOB_LEASE)
	Slice   time.Duration // how long one task works before handing over to the next; 0: 5 minutes
	// Pacer holds each round back while uploads stream in fast (nil: never).
	Pacer *Pacer
	// Brakes is told after each round that created accounts (nil: no
	// error-rate brake).
	Brakes *Brakes

	StageBatch  int // lines staged per statement; 0: 500
	CreateBatch int // accounts per creation transaction; 0: 100
	Parallel    int // creation transactions at once; 0: 4

	// Jobs run their rounds (stage, start, create, settle) one at a time
	// per worker process: several jobs at once add no throughput on a
	// Postgres that is already busy, only more backends competing with the
	// partners' status reads for its CPU. They take turns round by round.
	roundOnce sync.Once
	round     chan struct{}
	waiting   atomic.Int32 // jobs waiting for a turn
}

// takeRound waits for this process's turn to run a job round.
func (h *BulkJobHandler) takeRound(ctx context.Context) (release func(), err error) {
	h.roundOnce.Do(func() { h.round = make(chan struct{}, 1) })
	if err := ctx.Err(); err != nil {
		return nil, err // a free turn must not start a round of a stopped run
	}
	h.waiting.Add(1)
	defer h.waiting.Add(-1)
	select {
	case h.round <- struct{}{}:
		return func() { <-h.round }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (h *BulkJobHandler) defaults() (stage, create, parallel int, slice time.Duration) {
	stage, create, parallel, slice = h.StageBatch, h.CreateBatch, h.Parallel, h.Slice
	if stage <= 0 {
		stage = 500
	}
	if create <= 0 {
		create = 100
	}
	if parallel <= 0 {
		parallel = 4
	}
	if slice <= 0 {
		slice = 5 * time.Minute
	}
	return
}

// ProcessTask implements asynq.Handler.
func (h *BulkJobHandler) ProcessTask(ctx context.Context, t *asynq.Task) error {
	var p queue.BulkJob
	if err := queue.Decode(t, &p); err != nil {
		return err
	}
	owner := newOwner()
	job, ok, err := h.Store.ClaimJob(ctx, p.JobID, owner, h.Lease)
	if err != nil {
		return err
	}
	if !ok {
		return nil // finished, or another worker holds it
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		h.keepLease(ctx, cancel, job.ID, owner)
	}()
	done, until, err := h.drain(ctx, job)
	cancel()
	wg.Wait()
	if done {
		h.Log.InfoContext(ctx, "bulk job finished", "job_id", job.ID)
		return nil
	}
	// Hand over: the next epoch's task continues (the reconciler makes it
	// if this enqueue is lost).
	bg := context.WithoutCancel(ctx)
	epoch, yErr := h.Store.YieldJob(bg, job.ID, owner)
	if yErr == nil && epoch > 0 && err == nil {
		// Waiting for the window: the next task is held until it opens.
		if qErr := h.Queue.Enqueue(bg, queue.BulkJob{JobID: job.ID, Epoch: epoch, NotBefore: until}); qErr != nil {
			h.Log.WarnContext(bg, "bulk job continuation not enqueued; reconciler will", "job_id", job.ID, "err", qErr.Error())
		}
	}
	if errors.Is(err, postgres.ErrJobNotProcessing) {
		return nil // cancelled
	}
	return err
}

// keepLease renews the job's lease until ctx ends; if the lease is lost
// (another worker took the job over), it stops this run.
func (h *BulkJobHandler) keepLease(ctx context.Context, stop context.CancelFunc, jobID int64, owner string) {
	t := time.NewTicker(h.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, ok, err := h.Store.ClaimJob(ctx, jobID, owner, h.Lease)
		if err == nil && !ok {
			stop()
			return
		}
	}
}

// drain works on the job until it is finished (true), its time slice ends
// or ctx ends (false), or only its schedule window's start is awaited
// (until: when to come back).
func (h *BulkJobHandler) drain(ctx context.Context, job dataimport.Job) (done bool, until time.Time, err error) {
	done, err = h.drainWindow(ctx, job, &until)
	return done, until, err
}

func (h *BulkJobHandler) drainWindow(ctx context.Context, job dataimport.Job, wake *time.Time) (done bool, err error) {
	stageN, createN, parallel, slice := h.defaults()
	until := time.Now().Add(slice)
	var sampled time.Time
	// Where the scans for lines to stage and to start resume: past the
	// lines already handled (reset when a round finds nothing, so lines
	// left for a later round are found again).
	var stagedTo, startedTo int64
	// Lines in flight and lines to settle are looked for across the whole
	// job only when this run starts and after a round that found nothing to
	// do (a dead run's lines, an attempt another path ended); otherwise a
	// round settles just the lines it created. Every line a job ever had in
	// flight leaves a dead entry in the in-flight index until a vacuum, so a
	// whole-job look costs more as the job goes on (276 ms at a million
	// lines with autovacuum off), once per round it would slow the job
	// down as it grows.
	wholeJob := true
	// The turn held for the rounds under way (see keepTurn).
	var turn func()
	// The previous round's creations, running while this round stages,
	// starts and revalidates its lines (bulk_round.go).
	var pending *roundCreations
	settlePending := func() error {
		p := pending
		pending = nil
		return h.finishRound(ctx, job, p)
	}
	defer func() {
		if serr := settlePending(); err == nil {
			err = serr
		}
		if turn != nil {
			turn()
		}
	}()
	for {
		if h.Pacer.Busy() {
			// Held back: what runs settles first, and the turn is free.
			if err := settlePending(); err != nil {
				return false, err
			}
			if turn != nil {
				turn()
				turn = nil
			}
		}
		if _, err := h.Pacer.Hold(ctx); err != nil {
			return false, err
		}
		if turn == nil {
			if turn, err = h.takeRound(ctx); err != nil {
				return false, err
			}
		}
		// Its supplier Paused: the round waits (nothing staged or started);
		// Complete: what has not started ends, then the job finishes.
		if held, done, err := h.supplierStopped(ctx, job); err != nil || held || done {
			if serr := settlePending(); err == nil {
				err = serr
			}
			turn()
			turn = nil
			if err != nil || done {
				return done, err
			}
			select {
			case <-ctx.Done():
				return false, ctx.Err()
			case <-time.After(pauseLook):
			}
			if time.Now().After(until) {
				return false, nil
			}
			wholeJob = true // lines a pause stopped mid-batch are in flight
			continue
		}
		overlapped := pending != nil
		progress := false
		var inflight []postgres.JobCandidate
		if wholeJob {
			// Lines a dead run left in flight are created first; this
			// run's own are settled before they are looked for.
			if err := settlePending(); err != nil {
				return false, err
			}
			if inflight, err = h.Store.JobInFlight(ctx, job.ID, createN*parallel); err != nil {
				return false, err
			}
		}
		if len(inflight) > 0 {
			progress = true
			if err := h.createNow(ctx, job, inflight, createN, parallel); err != nil {
				return false, err
			}
		} else {
			n, last, err := h.Store.StageJobChunk(ctx, job, stagedTo, stageN)
			if err != nil {
				return false, err
			}
			progress, stagedTo = n > 0, last
			now := h.Now()
			if job.Create && job.WindowEnd != nil && now.After(*job.WindowEnd) {
				// The window ended: what has not started never will.
				if err := h.Store.ExpireJobLines(ctx, job.ID, dataimport.WindowExpired(*job.WindowEnd)); err != nil {
					return false, err
				}
			}
			waiting := job.Create && job.WindowStart != nil && now.Before(*job.WindowStart)
			if waiting && n == 0 {
				*wake = *job.WindowStart // staged all it can: come back when the window opens
				return false, nil
			}
			if job.Create && !waiting {
				started, err := h.start(ctx, job, &startedTo, createN*parallel)
				if err != nil {
					return false, err
				}
				if len(started) > 0 {
					progress = true
					next, err := h.prepareRound(ctx, job, started)
					if err != nil {
						return false, err
					}
					if err := settlePending(); err != nil {
						h.release(ctx, started, 0)
						return false, err
					}
					pending = h.launchRound(ctx, job, next, createN, parallel)
				}
			}
		}
		if !progress && overlapped {
			// Nothing staged or started while the previous round's
			// creations ran (they may hold the slots under the cap): they
			// settle, and the next round looks again.
			if err := settlePending(); err != nil {
				return false, err
			}
		} else if wholeJob || !progress {
			if err := settlePending(); err != nil {
				return false, err
			}
			if err := h.Store.ResolveJobLines(ctx, job.ID, nil); err != nil {
				return false, err
			}
		} else if len(inflight) > 0 {
			if err := h.Store.ResolveJobLines(ctx, job.ID, lines(inflight)); err != nil {
				return false, err
			}
		}
		if len(inflight) > 0 && !job.DryRun {
			h.Brakes.Check(ctx, job.SupplierID)
		}
		// Keep looking at the whole job while a dead run's lines remain.
		wholeJob = len(inflight) > 0
		if time.Since(sampled) >= 2*time.Second {
			sampled = time.Now()
			if err := h.Store.SampleJobRate(ctx, job.ID); err != nil {
				h.Log.WarnContext(ctx, "job rate not sampled", "job_id", job.ID, "err", err.Error())
			}
		}
		if !progress && !overlapped {
			done, err := h.Store.FinishJobIfDone(ctx, job.ID)
			if err != nil || done {
				return done, err
			}
			// Waiting: for slots under the cap, or for attempts another
			// path is running. Look from the start again next round.
			stagedTo, startedTo, wholeJob = 0, 0, true
			turn()
			turn = nil
			select {
			case <-ctx.Done():
				return false, ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
		if turn != nil && !h.keepTurn(pending) {
			if err := settlePending(); err != nil {
				return false, err
			}
			turn()
			turn = nil
		}
		if time.Now().After(until) {
			return false, nil
		}
	}
}

// start takes a slot under the cluster-wide cap for each of up to limit
// staged lines (stopping at the first refusal) and starts their attempts.
// Slots of attempts that did not start are given back.
func (h *BulkJobHandler) start(ctx context.Context, job dataimport.Job, after *int64, limit int) ([]postgres.JobCandidate, error) {
	cands, err := h.Store.JobStartCandidates(ctx, job.ID, *after, limit)
	if err != nil || len(cands) == 0 {
		return nil, err
	}
	own := jobOwner(job)
	caps, err := h.Store.Caps(ctx, own)
	if err != nil {
		return nil, err
	}
	// fair: under a global cap the round takes at most its supplier's fair
	// share, so other suppliers' per-account creates are not starved.
	n, err := h.Slots.AcquireManyFor(ctx, holders(cands, 1), own, caps, true)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	held := cands[:n]
	started, err := h.Store.BeginJobAttempts(ctx, job, held)
	if err != nil {
		h.release(ctx, held, 1)
		if errors.Is(err, postgres.ErrSupplierNotOngoing) {
			return nil, nil // paused meanwhile: the next round waits
		}
		return nil, err
	}
	// Lines before the last one taken are started or settled (a line whose
	// attempt moved on is found again after a reset).
	*after = held[len(held)-1].Line
	got := make(map[int64]bool, len(started))
	for _, c := range started {
		got[c.ProcessID] = true
	}
	var unused []postgres.JobCandidate
	for _, c := range held {
		if !got[c.ProcessID] {
			unused = append(unused, c)
		}
	}
	h.release(ctx, unused, 1)
	return started, nil
}

// jobOwner is whose work a job's slots are.
func jobOwner(job dataimport.Job) queue.Owner {
	return queue.Owner{Supplier: job.SupplierID, Organisation: job.OrganisationID}
}

// lines are cands' line numbers.
func lines(cands []postgres.JobCandidate) []int64 {
	ls := make([]int64, len(cands))
	for i, c := range cands {
		ls[i] = c.Line
	}
	return ls
}

// holders names the slots of cands' attempts (plus offset, as release).
func holders(cands []postgres.JobCandidate, offset int) []string {
	hs := make([]string, len(cands))
	for i, c := range cands {
		hs[i] = queue.SlotHolder(c.ProcessID, c.Attempt+offset)
	}
	return hs
}

// release gives back the slots of cands' attempts (plus offset: the attempt
// a slot was taken for before it started).
func (h *BulkJobHandler) release(ctx context.Context, cands []postgres.JobCandidate, offset int) {
	// A slot not given back (Redis unreachable) runs out with its lease.
	_ = h.Slots.ReleaseMany(context.WithoutCancel(ctx), holders(cands, offset))
}

// pauseLook is how often a job of a Paused supplier looks whether it was
// resumed.
const pauseLook = 500 * time.Millisecond

// supplierStopped looks at the job's supplier, in Postgres: held while it
// is Paused; when it is Complete, what of the job has not started ends and
// done says whether the job finished.
func (h *BulkJobHandler) supplierStopped(ctx context.Context, job dataimport.Job) (held, done bool, err error) {
	status, err := h.Store.SupplierStatusOf(ctx, job.SupplierID)
	if err != nil {
		return false, false, err
	}
	switch status {
	case dataimport.SupplierPaused:
		return true, false, nil
	case dataimport.SupplierComplete:
		if err := h.Store.EndJobOnComplete(ctx, job); err != nil {
			return false, false, err
		}
		done, err := h.Store.FinishJobIfDone(ctx, job.ID)
		if err != nil || done {
			return false, done, err
		}
		// Lines still in flight (a batch committing): look again shortly.
		return true, false, nil
	}
	return false, false, nil
}

func newOwner() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// String is for logs.
func (h *BulkJobHandler) String() string { return fmt.Sprintf("%s handler", queue.TypeBulkJob) }

// JobWaker finds bulk jobs no live worker holds, and uploads that were lost.
type JobWaker interface {
	JobsToWake(ctx context.Context) ([]postgres.JobToWake, error)
	FailLostUploads(ctx context.Context, olderThan time.Duration) (int64, error)
}

// LostUploadAfter is how long a RECEIVING job may go without a heartbeat
// from its upload before it is failed (a retry with the same
// Idempotency-Key takes it over much sooner), unless UPLOAD_LOST_AFTER
// says otherwise. The heartbeat beats only while body bytes arrive.
const LostUploadAfter = time.Hour

// wakeJobs enqueues a task for every PROCESSING job nobody holds: after
// Redis lost its task, after its worker died (once the lease lapses), or
// when a hand-over's enqueue failed.
func (r *Reconciler) wakeJobs(ctx context.Context) error {
	if r.Jobs == nil {
		return nil
	}
	lost := r.LostUploadAfter
	if lost <= 0 {
		lost = LostUploadAfter
	}
	if _, err := r.Jobs.FailLostUploads(ctx, lost); err != nil {
		return err
	}
	jobs, err := r.Jobs.JobsToWake(ctx)
	if err != nil {
		return err
	}
	for _, j := range jobs {
		if err := r.Queue.Enqueue(ctx, queue.BulkJob{JobID: j.ID, Epoch: j.Epoch}); err != nil {
			return err
		}
	}
	return nil
}
