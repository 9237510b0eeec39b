package jobs_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/gridshift/dataimport/jobs"
	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// overlapWatch records which of the bulk handler's steps ran while one of
// the job's creation transactions was under way.
type overlapWatch struct {
	*postgres.DB
	mu       sync.Mutex
	creating int
	creates  int
	// during: calls made while a creation ran, by step.
	during map[string]int
}

func (w *overlapWatch) note(step string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.creating > 0 {
		w.during[step]++
	}
}

func (w *overlapWatch) CreateJobAccounts(ctx context.Context, jobID int64, ins []postgres.CreationInput) ([]postgres.CreationResult, []error) {
	w.mu.Lock()
	w.creating++
	w.creates++
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.creating--
		w.mu.Unlock()
	}()
	time.Sleep(20 * time.Millisecond) // a creation long enough for the next round to overlap it
	return w.DB.CreateJobAccounts(ctx, jobID, ins)
}

func (w *overlapWatch) StageJobChunk(ctx context.Context, job dataimport.Job, after int64, limit int) (int, int64, error) {
	w.note("stage")
	return w.DB.StageJobChunk(ctx, job, after, limit)
}

func (w *overlapWatch) BeginJobAttempts(ctx context.Context, job dataimport.Job, cands []postgres.JobCandidate) ([]postgres.JobCandidate, error) {
	w.note("start")
	return w.DB.BeginJobAttempts(ctx, job, cands)
}

func (w *overlapWatch) LoadManyForCreation(ctx context.Context, ids []int64) (map[int64]postgres.LoadedProcess, error) {
	w.note("load")
	return w.DB.LoadManyForCreation(ctx, ids)
}

func (w *overlapWatch) JobInFlight(ctx context.Context, jobID int64, limit int) ([]postgres.JobCandidate, error) {
	w.note("in flight")
	return w.DB.JobInFlight(ctx, jobID, limit)
}

func (w *overlapWatch) ResolveJobLines(ctx context.Context, jobID int64, lines []int64) error {
	if lines == nil {
		w.note("resolve whole job")
	} else {
		w.note("resolve lines")
	}
	return w.DB.ResolveJobLines(ctx, jobID, lines)
}

func (w *overlapWatch) FinishJobIfDone(ctx context.Context, jobID int64) (bool, error) {
	w.note("finish")
	return w.DB.FinishJobIfDone(ctx, jobID)
}

// A bulk round's next lines are staged, started and loaded while the
// previous round's accounts are being created, and every look at the whole
// job (lines in flight, lines to settle, finishing) waits until this run's
// creations have ended: one of them taking a line still being created for
// a dead run's would create it twice. The job completes with every line
// created once and its counters exact.
func TestBulkRoundPreparesWhileThePreviousCreates(t *testing.T) {
	e := newSlotEnv(t, time.Minute)
	const n = 300
	job := e.receivedJob(n)
	w := &overlapWatch{DB: e.db, during: map[string]int{}}
	h := &jobs.BulkJobHandler{Store: w, Slots: e.slots, Queue: e.client, Log: quiet(), Now: time.Now, Lease: time.Minute,
		StageBatch: 50, CreateBatch: 10, Parallel: 2}
	e.runJob(h, job.ID)
	e.wantCompleted(job.ID, n)
	var c struct {
		NInProgress, NCreated, Lines, Processes int64
	}
	if err := e.db.Gorm().Raw(`SELECT j.n_in_progress, j.n_created,
			(SELECT count(*) FROM import_job_records r WHERE r.job_id = j.id AND r.outcome = 'created') AS lines,
			(SELECT count(*) FROM import_processes p WHERE p.supplier_id = j.supplier_id AND p.platform_account_number IS NOT NULL) AS processes
		FROM import_jobs j WHERE j.id = ?`, job.ID).Scan(&c).Error; err != nil {
		t.Fatal(err)
	}
	if c.NInProgress != 0 || c.NCreated != n || c.Lines != n || c.Processes != n {
		t.Fatalf("counters %+v, want none in progress and %d created lines, counted and imported", c, n)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, step := range []string{"stage", "start", "load"} {
		if w.during[step] == 0 {
			t.Errorf("no %s ran while a round's accounts were created (during: %v)", step, w.during)
		}
	}
	for _, step := range []string{"in flight", "resolve whole job", "finish"} {
		if w.during[step] > 0 {
			t.Errorf("%s ran %d times while this run's creations were under way", step, w.during[step])
		}
	}
	if w.creates < n/10 {
		t.Errorf("%d creation transactions, want at least %d", w.creates, n/10)
	}
}
