package jobs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"

	"github.com/gridshift/dataimport/jobs"
	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// slotEnv is a private database and Redis with the pieces that share the
// cluster-wide slots: the semaphore, the creation handler and the reconciler.
type slotEnv struct {
	t        *testing.T
	ctx      context.Context
	db       *postgres.DB
	rdb      *goredis.Client
	slots    *queue.Semaphore
	client   *queue.Client
	supplier dataimport.Supplier
	teamID   int64
}

func newSlotEnv(t *testing.T, lease time.Duration) *slotEnv {
	t.Helper()
	d := testutil.NewDatabase(t)
	r := testutil.NewRedis(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: r.Addr})
	t.Cleanup(func() { _ = rdb.Close() })
	client := queue.NewClient(asynq.RedisClientOpt{Addr: r.Addr})
	t.Cleanup(func() { _ = client.Close() })
	ctx := t.Context()
	sup, err := d.DB.CreateSupplier(ctx, dataimport.Supplier{Code: "SLOTS"})
	if err != nil {
		t.Fatal(err)
	}
	team, err := d.DB.CreateTeam(ctx, "Migrations")
	if err != nil {
		t.Fatal(err)
	}
	return &slotEnv{t: t, ctx: ctx, db: d.DB, rdb: rdb, slots: queue.NewSemaphore(rdb, "test:slots", lease),
		client: client, supplier: sup, teamID: team.ID}
}

// stage stages the sample account as external and returns its process.
func (e *slotEnv) stage(external string) dataimport.ImportProcess {
	e.t.Helper()
	raw, err := os.ReadFile("../pkg/dataimport/testdata/account_valid.json")
	if err != nil {
		e.t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		e.t.Fatal(err)
	}
	m["import_supplier"], m["external_account_number"] = e.supplier.Code, external
	body, err := json.Marshal(m)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.db.Stage(e.ctx, e.supplier, external, body); err != nil {
		e.t.Fatal(err)
	}
	p, err := e.db.Process(e.ctx, e.supplier.ID, external)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

// start does what the API does: take the next attempt's slot, start it.
func (e *slotEnv) start(p dataimport.ImportProcess) queue.CreateAccount {
	e.t.Helper()
	task := queue.CreateAccount{ProcessID: p.ID, SupplierID: e.supplier.ID, ExternalAccountNumber: p.ExternalAccountNumber, Attempt: p.Attempt + 1}
	if ok, err := e.slots.Acquire(e.ctx, task.SlotHolder(), 0); err != nil || !ok {
		e.t.Fatalf("acquire %s: %v, %v", task.SlotHolder(), ok, err)
	}
	attempt, started, err := e.db.StartAttempt(e.ctx, p.ID, p.Attempt, e.teamID, 0, false)
	if err != nil || !started || attempt != task.Attempt {
		e.t.Fatalf("start attempt: %d, %v, %v", attempt, started, err)
	}
	return task
}

func (e *slotEnv) held(holder string) bool {
	e.t.Helper()
	hs, err := e.slots.Holders(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, h := range hs {
		if h == holder {
			return true
		}
	}
	return false
}

func (e *slotEnv) reconciler(batch int) *jobs.Reconciler {
	return &jobs.Reconciler{Store: e.db, Tasks: asynqInspector(e.t, e.rdb), Queue: e.client, Slots: e.slots,
		Notify: queue.NewNotifier(e.rdb, "test"), Log: quiet(), Every: time.Hour, Grace: 0, Batch: batch}
}

func asynqInspector(t *testing.T, rdb *goredis.Client) *asynq.Inspector {
	i := asynq.NewInspector(asynq.RedisClientOpt{Addr: rdb.Options().Addr})
	t.Cleanup(func() { _ = i.Close() })
	return i
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// An old attempt that ends late (its give-up recorded after the partner has
// already started the next attempt) must free only its own slot, not the
// one the newer attempt holds: otherwise the newer attempt runs uncounted
// and the cluster-wide cap can be exceeded.
func TestLateEndOfOldAttemptKeepsNewerAttemptsSlot(t *testing.T) {
	e := newSlotEnv(t, time.Minute)
	p := e.stage("EXT-1")
	first := e.start(p)
	// Attempt 1 fails and is recorded; the partner creates again at once.
	if err := e.db.FinishAttempt(e.ctx, p.ID, first.Attempt, postgres.OutcomeFailed, nil); err != nil {
		t.Fatal(err)
	}
	p, _ = e.db.Process(e.ctx, e.supplier.ID, "EXT-1")
	second := e.start(p)
	// Only now does attempt 1's job get to its ending (asynq's give-up).
	h := &jobs.CreateAccountHandler{Store: e.db, Slots: e.slots, Notify: queue.NewNotifier(e.rdb, "test"), Queue: e.client,
		Metrics: jobs.NewMetrics(prometheus.NewRegistry()), Log: quiet(), Now: time.Now}
	task, err := first.Task()
	if err != nil {
		t.Fatal(err)
	}
	h.GiveUp(e.ctx, task, fmt.Errorf("retries exhausted"))
	if !e.held(second.SlotHolder()) {
		t.Fatalf("attempt %d's slot was freed by the end of attempt %d", second.Attempt, first.Attempt)
	}
	if n, _ := e.slots.InUse(e.ctx); n != 1 {
		t.Fatalf("slots in use = %d, want 1 (attempt %d)", n, second.Attempt)
	}
	// The reconciler's sweep frees a stale slot of attempt 1 (re-taken by a
	// late renewal, say) on its second look, and never attempt 2's.
	if ok, err := e.slots.Acquire(e.ctx, first.SlotHolder(), 0); err != nil || !ok {
		t.Fatal(ok, err)
	}
	r := e.reconciler(10)
	for range 3 {
		if _, err := r.Once(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if e.held(first.SlotHolder()) {
		t.Errorf("stale slot %s was not swept", first.SlotHolder())
	}
	if !e.held(second.SlotHolder()) {
		t.Errorf("the sweep freed %s, which a running attempt owns", second.SlotHolder())
	}
}

// Every queued job keeps its slot while it waits, however many are queued:
// the reconciler pages through all processes in progress across its passes
// and renews every live slot on each pass, not only one batch's.
func TestReconcilerKeepsEverySlotOfALongQueue(t *testing.T) {
	const lease = 1500 * time.Millisecond
	e := newSlotEnv(t, lease)
	var holders []string
	for i := range 12 {
		task := e.start(e.stage(fmt.Sprintf("EXT-%02d", i)))
		if err := e.client.Enqueue(e.ctx, task); err != nil { // queued; no worker runs it
			t.Fatal(err)
		}
		holders = append(holders, task.SlotHolder())
	}
	r := e.reconciler(5) // a batch smaller than the queue
	deadline := time.Now().Add(3 * lease)
	for time.Now().Before(deadline) {
		if _, err := r.Once(e.ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(lease / 5)
	}
	for _, h := range holders {
		if !e.held(h) {
			t.Errorf("slot %s of a queued job expired while it waited", h)
		}
	}
}

// A process in progress whose slot is gone (Redis lost it) gets it back from
// the reconciler, for every process, not only the first batch.
func TestReconcilerRetakesLostSlotsOfEveryBatch(t *testing.T) {
	e := newSlotEnv(t, time.Minute)
	var holders []string
	for i := range 7 {
		task := e.start(e.stage(fmt.Sprintf("EXT-%02d", i)))
		if err := e.client.Enqueue(e.ctx, task); err != nil {
			t.Fatal(err)
		}
		holders = append(holders, task.SlotHolder())
	}
	if err := e.rdb.Del(e.ctx, "test:slots").Err(); err != nil { // the slots are lost, the queue is not
		t.Fatal(err)
	}
	r := e.reconciler(3)
	for range 3 { // 3 passes of 3 cover all 7
		if _, err := r.Once(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range holders {
		if !e.held(h) {
			t.Errorf("slot %s was not taken again", h)
		}
	}
}

// A slot taken for an attempt that has not started yet (the API and bulk
// jobs take the slot first, then start the attempt) survives the sweep's
// passes until Grace has gone by, however many passes come first: freed
// early, it would go to another account while this one starts anyway, and
// more accounts than the cap would be in progress. Once Grace has passed
// with the attempt never started, the slot is freed.
func TestSweepKeepsASlotWhoseAttemptIsStarting(t *testing.T) {
	e := newSlotEnv(t, time.Minute)
	p := e.stage("EXT-1")
	task := queue.CreateAccount{ProcessID: p.ID, SupplierID: e.supplier.ID, ExternalAccountNumber: p.ExternalAccountNumber, Attempt: p.Attempt + 1}
	if ok, err := e.slots.Acquire(e.ctx, task.SlotHolder(), 0); err != nil || !ok {
		t.Fatal(ok, err)
	}
	const grace = 1500 * time.Millisecond
	r := e.reconciler(10)
	r.Grace = grace
	// A loaded machine: several passes before the attempt's statement runs.
	for range 4 {
		if _, err := r.Once(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !e.held(task.SlotHolder()) {
		t.Fatal("the sweep freed the slot of an attempt about to start")
	}
	// An attempt that never starts (its starter died) loses its slot once
	// Grace has passed.
	other := e.stage("EXT-2")
	orphan := queue.SlotHolder(other.ID, other.Attempt+1)
	if ok, err := e.slots.Acquire(e.ctx, orphan, 0); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, _, err := e.db.StartAttempt(e.ctx, p.ID, p.Attempt, e.teamID, 0, false); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(grace + time.Second)
	for time.Now().Before(deadline) {
		if _, err := r.Once(e.ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !e.held(task.SlotHolder()) {
		t.Error("the sweep freed the slot of a started attempt")
	}
	if e.held(orphan) {
		t.Errorf("slot %s of an attempt that never started was not freed after Grace", orphan)
	}
}
