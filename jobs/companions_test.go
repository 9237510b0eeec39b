package jobs_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gridshift/dataimport/jobs"
	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
)

// published records the processes whose waiters were woken.
type published struct {
	mu  sync.Mutex
	ids []int64
}

func (p *published) Publish(_ context.Context, processID int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ids = append(p.ids, processID)
	return nil
}

func (p *published) has(id int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Contains(p.ids, id)
}

func (e *slotEnv) createHandler(pub *published) *jobs.CreateAccountHandler {
	return &jobs.CreateAccountHandler{Store: e.db, Slots: e.slots, Notify: pub, Queue: e.client,
		Metrics: jobs.NewMetrics(prometheus.NewRegistry()), Log: quiet(), Now: time.Now}
}

func (e *slotEnv) runCreate(h *jobs.CreateAccountHandler, p queue.CreateAccount) {
	e.t.Helper()
	task, err := p.Task()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := h.ProcessTask(e.ctx, task); err != nil {
		e.t.Fatalf("task of process %d: %v", p.ProcessID, err)
	}
}

func (e *slotEnv) count(query string, args ...any) int64 {
	e.t.Helper()
	var n int64
	if err := e.db.Gorm().Raw(query, args...).Scan(&n).Error; err != nil {
		e.t.Fatal(err)
	}
	return n
}

// One creation task takes the started attempts whose tasks are still queued
// along into its transaction, each created once, its partner woken; their
// own tasks then only end them (outcome counted, slot released).
func TestCreationTaskTakesQueuedAttemptsAlong(t *testing.T) {
	e := newSlotEnv(t, time.Minute)
	const n = 20
	tasks := make([]queue.CreateAccount, n)
	for i := range tasks {
		tasks[i] = e.start(e.stage(fmt.Sprintf("EXT-%02d", i)))
	}
	pub := &published{}
	h := e.createHandler(pub)
	e.runCreate(h, tasks[0])
	if got := e.count(`SELECT count(*) FROM accounts`); got != n {
		t.Fatalf("%d accounts after the first task, want all %d", got, n)
	}
	// Rows one transaction wrote share its xmin.
	if got := e.count(`SELECT count(DISTINCT xmin::text) FROM accounts`); got != 1 {
		t.Errorf("accounts created in %d transactions, want 1", got)
	}
	for _, p := range tasks {
		if !pub.has(p.ProcessID) {
			t.Errorf("process %d created, its waiters not woken", p.ProcessID)
		}
	}
	for _, p := range tasks[1:] {
		e.runCreate(h, p)
	}
	if got := e.count(`SELECT count(*) FROM accounts`); got != n {
		t.Fatalf("%d accounts after every task ran, want %d", got, n)
	}
	for _, p := range tasks {
		var att struct {
			Outcome string
			N       int64
		}
		if err := e.db.Gorm().Raw(`SELECT max(outcome) AS outcome, count(*) AS n FROM import_attempts WHERE process_id = ?`, p.ProcessID).
			Scan(&att).Error; err != nil {
			t.Fatal(err)
		}
		events := e.count(`SELECT count(*) FROM import_process_events WHERE process_id = ? AND event = ?`, p.ProcessID, dataimport.EventProcessed)
		if att.N != 1 || att.Outcome != postgres.OutcomeCompleted || events != 1 {
			t.Errorf("process %d: %d attempts (%s), %d processed events; want one of each", p.ProcessID, att.N, att.Outcome, events)
		}
		if e.held(p.SlotHolder()) {
			t.Errorf("slot %s still held after its task ended", p.SlotHolder())
		}
	}
}

// A companion that cannot be created is left to its own task, which
// records why, as it would have without the other task.
func TestCompanionThatFailsIsLeftToItsOwnTask(t *testing.T) {
	e := newSlotEnv(t, time.Minute)
	good := e.start(e.stage("EXT-GOOD"))
	bad := e.start(e.stage("EXT-BAD"))
	first := e.start(e.stage("EXT-FIRST"))
	// Invalid by now (the rules are checked again at creation).
	if err := e.db.Gorm().Exec(`UPDATE import_process_versions SET payload = jsonb_set(payload, '{customers,0,mobile}', '"12"')
		WHERE process_id = ?`, bad.ProcessID).Error; err != nil {
		t.Fatal(err)
	}
	h := e.createHandler(&published{})
	e.runCreate(h, first)
	if got := e.count(`SELECT count(*) FROM accounts`); got != 2 {
		t.Fatalf("%d accounts, want the first and the good companion", got)
	}
	if p, _ := e.db.Process(e.ctx, e.supplier.ID, "EXT-BAD"); p.Status != dataimport.StatusInProgress || p.LatestError != nil {
		t.Fatalf("the invalid companion is %s (%v); its own task has not run, so it is still in progress", p.Status, p.LatestError)
	}
	e.runCreate(h, bad)
	p, _ := e.db.Process(e.ctx, e.supplier.ID, "EXT-BAD")
	if p.Status != dataimport.StatusUnknown || p.LatestError == nil || p.LatestError.Code != dataimport.CodeAccountFailedValidation {
		t.Fatalf("after its own task: %s, %+v; want UNKNOWN with account_failed_validation", p.Status, p.LatestError)
	}
	e.runCreate(h, good)
	if got := e.count(`SELECT count(*) FROM accounts`); got != 2 {
		t.Fatalf("%d accounts, want 2", got)
	}
}

// awaitingWatch lists, while each of a job's creation transactions is
// about to run, what a per-account task could take along.
type awaitingWatch struct {
	*postgres.DB
	mu     sync.Mutex
	listed []int64
	looks  int
}

func (w *awaitingWatch) CreateJobAccounts(ctx context.Context, jobID int64, ins []postgres.CreationInput) ([]postgres.CreationResult, []error) {
	ids, err := w.AwaitingCreation(ctx, nil, 1000)
	if err != nil {
		panic(err)
	}
	w.mu.Lock()
	w.listed = append(w.listed, ids...)
	w.looks++
	w.mu.Unlock()
	return w.DB.CreateJobAccounts(ctx, jobID, ins)
}

// A bulk job's attempts are created only by the job's rounds, under its
// guard: no per-account task ever takes them along, while a per-account
// attempt started at the same time is listed.
func TestJobAttemptsAreNeverTakenAlong(t *testing.T) {
	e := newSlotEnv(t, time.Minute)
	v1 := e.start(e.stage("EXT-V1"))
	job := e.receivedJob(30)
	w := &awaitingWatch{DB: e.db}
	h := &jobs.BulkJobHandler{Store: w, Slots: e.slots, Queue: e.client, Log: quiet(), Now: time.Now, Lease: time.Minute,
		StageBatch: 10, CreateBatch: 10, Parallel: 1}
	e.runJob(h, job.ID)
	e.wantCompleted(job.ID, 30)
	if w.looks == 0 {
		t.Fatal("no creation transaction of the job was watched")
	}
	for _, id := range w.listed {
		if id != v1.ProcessID {
			t.Fatalf("process %d of the job was listed as awaiting a per-account creation", id)
		}
	}
	if !slices.Contains(w.listed, v1.ProcessID) {
		t.Fatalf("the started v1 attempt (process %d) was never listed: listed %v", v1.ProcessID, w.listed)
	}
}
