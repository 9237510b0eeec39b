package jobs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gridshift/dataimport/jobs"
	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
)

// wholeJobCounter counts the bulk handler's reads that look at every line
// of the job (lines in flight, lines to settle), which grow dearer as the
// job goes on.
type wholeJobCounter struct {
	*postgres.DB
	inFlight, resolveAll, resolveSome atomic.Int64
}

func (c *wholeJobCounter) JobInFlight(ctx context.Context, jobID int64, limit int) ([]postgres.JobCandidate, error) {
	c.inFlight.Add(1)
	return c.DB.JobInFlight(ctx, jobID, limit)
}

func (c *wholeJobCounter) ResolveJobLines(ctx context.Context, jobID int64, lines []int64) error {
	if lines == nil {
		c.resolveAll.Add(1)
	} else {
		c.resolveSome.Add(1)
	}
	return c.DB.ResolveJobLines(ctx, jobID, lines)
}

// receivedJob makes a PROCESSING job of n copies of the sample account, as
// an upload leaves it.
func (e *slotEnv) receivedJob(n int) dataimport.Job {
	e.t.Helper()
	return e.receivedJobFor(n, "Bulk Partner", "BULK")
}

// receivedJobFor is receivedJob for its own organisation and supplier.
func (e *slotEnv) receivedJobFor(n int, orgName, supplier string) dataimport.Job {
	e.t.Helper()
	raw, err := os.ReadFile("../pkg/dataimport/testdata/account_valid.json")
	if err != nil {
		e.t.Fatal(err)
	}
	org, err := e.db.CreateOrganisation(e.ctx, orgName)
	if err != nil {
		e.t.Fatal(err)
	}
	// The sample account's phone numbers are British.
	sup, err := e.db.CreateSupplier(e.ctx, dataimport.Supplier{Code: supplier, PhoneRegion: "GB"})
	if err != nil {
		e.t.Fatal(err)
	}
	job, _, err := e.db.CreateJob(e.ctx, postgres.NewJob{OrganisationID: org.ID, SupplierID: sup.ID, TeamID: &e.teamID, Create: true}, time.Minute)
	if err != nil {
		e.t.Fatal(err)
	}
	_, err = e.db.ReceiveJob(e.ctx, job.ID, 0, func() int64 { return 0 }, func() []byte { return make([]byte, 32) }, func(emit func(postgres.JobLine) error) error {
		for i := range n {
			var m map[string]any
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			if err := dec.Decode(&m); err != nil {
				return err
			}
			ext := fmt.Sprintf("EXT-%04d", i)
			m["import_supplier"], m["external_account_number"] = sup.Code, ext
			line, err := json.Marshal(m)
			if err != nil {
				return err
			}
			acc, err := dataimport.DecodeAccount(line, dataimport.AccountRules{PhoneRegion: sup.PhoneRegion})
			if err != nil {
				return err
			}
			payload, err := json.Marshal(acc)
			if err != nil {
				return err
			}
			if err := emit(postgres.JobLine{Line: i + 1, External: ext, Payload: payload}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return job
}

// runJob runs one task of the bulk job through h, failing the test on error.
func (e *slotEnv) runJob(h *jobs.BulkJobHandler, jobID int64) {
	e.t.Helper()
	task, err := queue.BulkJob{JobID: jobID}.Task()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := h.ProcessTask(e.ctx, task); err != nil {
		e.t.Fatal(err)
	}
}

// wantCompleted fails the test unless the job is COMPLETED with n created.
func (e *slotEnv) wantCompleted(jobID int64, n int64) {
	e.t.Helper()
	var v struct {
		State    string
		NCreated int64
	}
	if err := e.db.Gorm().Raw(`SELECT state, n_created FROM import_jobs WHERE id = ?`, jobID).Scan(&v).Error; err != nil {
		e.t.Fatal(err)
	}
	if v.State != "COMPLETED" || v.NCreated != n {
		e.t.Fatalf("job %s with %d created, want COMPLETED with %d", v.State, v.NCreated, n)
	}
}

// A bulk job's rounds settle only the lines they created: the whole job's
// lines in flight are looked at when a run starts and after a round with
// nothing to do, not once per round (each such look walks every line the
// job ever had in flight, dead index entries included, and slowed a
// million-line job down as it grew).
func TestBulkJobRoundsLookOnlyAtTheirOwnLines(t *testing.T) {
	e := newSlotEnv(t, time.Minute)
	const n = 400
	job := e.receivedJob(n)
	store := &wholeJobCounter{DB: e.db}
	h := &jobs.BulkJobHandler{Store: store, Slots: e.slots, Queue: e.client, Log: quiet(), Now: time.Now, Lease: time.Minute,
		CreateBatch: 10, Parallel: 2}
	e.runJob(h, job.ID)
	e.wantCompleted(job.ID, n)
	rounds := store.resolveSome.Load()
	if rounds < n/20-1 { // the first round looks at the whole job
		t.Fatalf("%d rounds settled their own lines, want at least %d (20 accounts a round)", rounds, n/20-1)
	}
	if whole := store.inFlight.Load() + store.resolveAll.Load(); whole > 8 {
		t.Fatalf("%d whole-job reads over %d rounds: the job is walked every round", whole, rounds)
	}
	if left := e.db.Gorm().Raw(`SELECT 1 FROM import_job_records WHERE job_id = ? AND outcome <> 'created'`, job.ID).Row(); left.Scan(new(int)) == nil {
		t.Fatal("a line of the completed job is not created")
	}
}

// receiveLines receives a job whose lines carry the given external numbers
// (their payloads are not read here) and returns it with its counters.
func (e *slotEnv) receiveLines(ctx context.Context, org int64, externals []string) (dataimport.Job, dataimport.JobCounters, error) {
	e.t.Helper()
	job, _, err := e.db.CreateJob(ctx, postgres.NewJob{OrganisationID: org, SupplierID: e.supplier.ID, Create: false}, time.Minute)
	if err != nil {
		e.t.Fatal(err)
	}
	c, err := e.db.ReceiveJob(ctx, job.ID, 0, func() int64 { return 0 }, func() []byte { return make([]byte, 32) }, func(emit func(postgres.JobLine) error) error {
		for i, ext := range externals {
			if err := emit(postgres.JobLine{Line: i + 1, External: ext, Payload: []byte(`{}`)}); err != nil {
				return err
			}
		}
		return nil
	})
	return job, c, err
}

// A job received after the table's statistics were taken (autovacuum's
// ANALYZE, or the workers' statistics keeper) marks its duplicate lines in
// one pass. Its lines are its own transaction's, so the planner takes the
// job for one row; the single UPDATE joining the duplicates to the table
// then re-ran the whole window for every line, and a second 400,000-line
// job was still marking duplicates after 10 minutes. Here the second job
// of 20,000 lines (5,000 replaced by later lines) would take minutes.
func TestReceiveJobOnAnalyzedTableMarksDuplicatesInOnePass(t *testing.T) {
	e := newSlotEnv(t, time.Minute)
	org, err := e.db.CreateOrganisation(e.ctx, "Uploads")
	if err != nil {
		t.Fatal(err)
	}
	const n = 20000
	first := make([]string, n)
	for i := range first {
		first[i] = fmt.Sprintf("A-%05d", i)
	}
	if _, _, err := e.receiveLines(e.ctx, org.ID, first); err != nil {
		t.Fatal(err)
	}
	if err := e.db.Gorm().Exec(`ANALYZE import_job_records`).Error; err != nil {
		t.Fatal(err)
	}
	second := make([]string, n)
	for i := range second {
		second[i] = fmt.Sprintf("B-%05d", i%(n-5000))
	}
	// Not a speed target: a bound far above the one pass (well under a
	// second) and far below the quadratic plan.
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	job, c, err := e.receiveLines(ctx, org.ID, second)
	if err != nil {
		t.Fatal(err)
	}
	if c.DuplicateLine != 5000 || c.Pending != n-5000 {
		t.Fatalf("counters %+v, want 5000 duplicate lines and %d pending", c, n-5000)
	}
	var detail string
	if err := e.db.Gorm().Raw(`SELECT errors->>'detail' FROM import_job_records WHERE job_id = ? AND line = 1 AND outcome = 'duplicate_line'`, job.ID).Scan(&detail).Error; err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("Line %d has the same external_account_number", n-5000+1); len(detail) < len(want) || detail[:len(want)] != want {
		t.Fatalf("line 1: %q, want it replaced by line %d", detail, n-5000+1)
	}
}

// roundCounter records how many jobs are inside a round's Postgres work at
// once in one worker process.
type roundCounter struct {
	*postgres.DB
	mu     sync.Mutex
	active map[int64]int
	most   int
}

func (c *roundCounter) enter(jobID int64) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active[jobID]++
	c.most = max(c.most, len(c.active))
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.active[jobID]--; c.active[jobID] == 0 {
			delete(c.active, jobID)
		}
	}
}

func (c *roundCounter) StageJobChunk(ctx context.Context, job dataimport.Job, after int64, limit int) (int, int64, error) {
	defer c.enter(job.ID)()
	time.Sleep(2 * time.Millisecond) // widen the window two unserialised jobs would overlap in
	return c.DB.StageJobChunk(ctx, job, after, limit)
}

func (c *roundCounter) CreateJobAccounts(ctx context.Context, jobID int64, ins []postgres.CreationInput) ([]postgres.CreationResult, []error) {
	defer c.enter(jobID)()
	time.Sleep(2 * time.Millisecond)
	return c.DB.CreateJobAccounts(ctx, jobID, ins)
}

// Two jobs processed at once by one worker take turns round by round: at
// most one job's statements run at a time (more only compete with status
// reads for Postgres's CPU), and both finish.
func TestBulkJobsTakeTurnsInOneWorker(t *testing.T) {
	e := newSlotEnv(t, time.Minute)
	const n = 200
	a, b := e.receivedJobFor(n, "Partner A", "BULK_A"), e.receivedJobFor(n, "Partner B", "BULK_B")
	store := &roundCounter{DB: e.db, active: map[int64]int{}}
	h := &jobs.BulkJobHandler{Store: store, Slots: e.slots, Queue: e.client, Log: quiet(), Now: time.Now, Lease: time.Minute,
		StageBatch: 20, CreateBatch: 10, Parallel: 2}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, job := range []dataimport.Job{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			task, err := queue.BulkJob{JobID: job.ID}.Task()
			if err == nil {
				err = h.ProcessTask(e.ctx, task)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	var created int64
	if err := e.db.Gorm().Raw(`SELECT sum(n_created) FROM import_jobs WHERE id IN (?, ?) AND state = 'COMPLETED'`, a.ID, b.ID).Scan(&created).Error; err != nil {
		t.Fatal(err)
	}
	if created != 2*n {
		t.Fatalf("%d accounts created by the two completed jobs, want %d", created, 2*n)
	}
	if store.most != 1 {
		t.Fatalf("%d jobs ran rounds at once in one worker, want 1", store.most)
	}
}

// stageCounter counts the bulk handler's staging statements: one per round.
type stageCounter struct {
	*postgres.DB
	staged atomic.Int64
}

func (c *stageCounter) StageJobChunk(ctx context.Context, job dataimport.Job, after int64, limit int) (int, int64, error) {
	c.staged.Add(1)
	return c.DB.StageJobChunk(ctx, job, after, limit)
}

// While another partner's upload streams in fast, a received job's rounds
// wait (the CPU is the upload's and the status reads'); once that upload is
// in they go on and the job completes. The pace is read from the real job
// rows an upload's heartbeat keeps.
func TestBulkJobRoundsWaitWhileAnUploadStreamsIn(t *testing.T) {
	e := newSlotEnv(t, time.Minute)
	const n = 60
	job := e.receivedJob(n)
	org, err := e.db.CreateOrganisation(e.ctx, "Uploading Partner")
	if err != nil {
		t.Fatal(err)
	}
	sup, err := e.db.CreateSupplier(e.ctx, dataimport.Supplier{Code: "UPLOADING"})
	if err != nil {
		t.Fatal(err)
	}
	upload, _, err := e.db.CreateJob(e.ctx, postgres.NewJob{OrganisationID: org.ID, SupplierID: sup.ID, TeamID: &e.teamID, Create: true}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	pacer := &jobs.Pacer{Receiving: e.db.ReceivingLines, Log: quiet(), Every: 100 * time.Millisecond, MaxHold: time.Minute}
	ctx, stop := context.WithCancel(e.ctx)
	defer stop()
	go pacer.Run(ctx)

	// The upload: lines (invalid ones are stored and counted the same) as
	// fast as they can be stored, until told to end.
	end := make(chan struct{})
	received := make(chan error, 1)
	go func() {
		_, err := e.db.ReceiveJob(ctx, upload.ID, 0, func() int64 { return 0 }, func() []byte { return make([]byte, 32) }, func(emit func(postgres.JobLine) error) error {
			for i := 1; ; i++ {
				select {
				case <-end:
					return nil
				default:
				}
				if err := emit(postgres.JobLine{Line: i, Err: dataimport.Errorf(dataimport.CodeParseError, "not JSON")}); err != nil {
					return err
				}
			}
		})
		received <- err
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !pacer.Busy() {
		if time.Now().After(deadline) {
			t.Fatal("the pacer never saw the upload")
		}
		time.Sleep(20 * time.Millisecond)
	}

	store := &stageCounter{DB: e.db}
	h := &jobs.BulkJobHandler{Store: store, Slots: e.slots, Queue: e.client, Log: quiet(), Now: time.Now, Lease: time.Minute,
		CreateBatch: 10, Parallel: 2, Pacer: pacer}
	task, err := queue.BulkJob{JobID: job.ID}.Task()
	if err != nil {
		t.Fatal(err)
	}
	processed := make(chan error, 1)
	go func() { processed <- h.ProcessTask(ctx, task) }()
	time.Sleep(3 * time.Second) // longer than the pace's window: the upload's pace is known and fast
	if got := store.staged.Load(); got != 0 {
		t.Fatalf("%d rounds ran while the upload streamed in at %.0f lines/s", got, pacer.Rate())
	}
	if rate := pacer.Rate(); rate < 500 {
		t.Fatalf("the upload streamed at %.0f lines/s, too slow to show anything", rate)
	}
	close(end)
	if err := <-received; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-processed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the job did not finish after the upload was in")
	}
	e.wantCompleted(job.ID, n)
	if held := pacer.Held(); held < 2*time.Second {
		t.Fatalf("rounds held %v, want the time the upload streamed", held)
	}
}
