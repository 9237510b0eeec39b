package app_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// CONTRACT §14 end to end, with a real worker process: a pause holds a
// bulk job mid-flight and a scheduled v2 account, resuming completes them;
// Complete ends what had not started; the error-rate brake pauses a
// supplier whose creations fail too often.

var pauseWorkerEnv = []string{"WORKER_CONCURRENCY=4", "RECONCILE_EVERY=200ms", "RECONCILE_GRACE=1s", "SLOT_LEASE=10s", "JOB_LEASE=5s"}

// pausedAt pauses (or ends) the supplier as an operator and returns when
// the change answered, by Postgres' clock.
func (p *pipeline) setStatusAt(st dataimport.SupplierStatus) time.Time {
	p.TB.Helper()
	ctx := postgres.WithActor(context.Background(), "importctl:test")
	must(p.TB, p.DB.SetSupplierStatus(ctx, "DEMO_ENERGY", st))
	var at time.Time
	must(p.TB, p.DB.Gorm().Raw(`SELECT clock_timestamp()`).Scan(&at).Error)
	return at
}

// heldJob reads the job's "held".
func (p *pipeline) heldJob(id int64) any {
	p.TB.Helper()
	r := p.As(p.token, http.MethodGet, jobsURL+strconv.FormatInt(id, 10)+"/", nil)
	return r.JSON()["held"]
}

// creationsSince counts creation transactions of the supplier that started
// after t (an attempt's finished_at is its transaction's start).
func (p *pipeline) creationsSince(t time.Time) int64 {
	return p.count(`SELECT count(*) FROM import_attempts WHERE outcome = 'COMPLETED' AND finished_at >= ?`, t)
}

func TestPauseHoldsJobAndScheduledAccountThenResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the worker binary")
	}
	// Enough lines that the job is far from done when the pause comes (at
	// 300 created, with at most 20 accounts in flight under the cap), few
	// enough that the rest is quick to create after the resume.
	n := envInt("PAUSE_JOB_LINES", 6000)
	p := newPipeline(t)
	ctx := context.Background()
	must(t, p.DB.SetConcurrencyLimit(ctx, 20)) // rounds in flight when the pause comes
	p.StartProcess("worker", pauseWorkerEnv...)
	id := acceptedJob(t, p.postJob(p.token, jobQuery, strings.NewReader(p.jobBody(0, n)), true))
	// A v2 account scheduled to start in a few seconds, while paused.
	windowStart := time.Now().Add(10 * time.Second)
	if r := p.createV2("V2-HELD", map[string]any{"schedule_window_start": ts(windowStart)}); r.Status != http.StatusAccepted && r.Status != http.StatusCreated {
		t.Fatalf("v2 create: %d %s", r.Status, r.Body)
	}
	// Paused with rounds in flight, before the v2 account's window opens.
	for v := p.job(p.token, id); v.Counters["created"] < 300 && time.Until(windowStart) > 3*time.Second; v = p.job(p.token, id) {
		time.Sleep(20 * time.Millisecond)
	}
	pausedAt := p.setStatusAt(dataimport.SupplierPaused)
	accountsAtPause := p.count(`SELECT count(*) FROM accounts`)
	if held := p.heldJob(id); held != dataimport.HeldSupplierPaused {
		t.Fatalf("job held = %v, want %s", held, dataimport.HeldSupplierPaused)
	}
	// Past the v2 account's window start, and long enough for several rounds.
	time.Sleep(time.Until(windowStart) + 3*time.Second)
	if got := p.count(`SELECT count(*) FROM accounts`); got != accountsAtPause {
		t.Fatalf("%d accounts created while Paused (%d when the pause answered)", got-accountsAtPause, accountsAtPause)
	}
	if got := p.creationsSince(pausedAt); got != 0 {
		t.Fatalf("%d creations started after the pause answered", got)
	}
	if accountsAtPause >= int64(n) {
		t.Fatalf("the job finished before the pause (%d accounts): nothing was held", accountsAtPause)
	}
	st := p.statusV2("V2-HELD")
	ev, _ := st["latest_event"].(map[string]any)
	if st["status"] != "PENDING" || ev["event"] != dataimport.EventHeld {
		t.Fatalf("scheduled v2 account while Paused: status %v, latest_event %v", st["status"], st["latest_event"])
	}
	if v := p.job(p.token, id); v.State != "PROCESSING" {
		t.Fatalf("job %s while Paused", v.State)
	}

	p.setStatusAt(dataimport.SupplierOngoing)
	v := p.waitJob(p.token, id, 4*time.Minute)
	if v.State != "COMPLETED" {
		t.Fatalf("job %s after resume: %v", v.State, v.Counters)
	}
	checkCounters(t, v, map[string]int64{"received": int64(n), "created": int64(n)})
	if held := p.heldJob(id); held != nil {
		t.Fatalf("finished job held = %v", held)
	}
	if st := p.waitV2("V2-HELD", time.Minute); st["status"] != "PROCESSED" {
		t.Fatalf("v2 account after resume: %v", st)
	}
	p.assertJobAccountsOnce(int64(n) + 1) // the job's accounts and the v2 one, each once
	evs := fmt.Sprint(p.eventsV2("V2-HELD"))
	if !strings.Contains(evs, "EVENT_ACCOUNT_IMPORT_PROCESS_HELD EVENT_ACCOUNT_IMPORT_PROCESS_STARTED EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED") {
		t.Fatalf("v2 timeline %s", evs)
	}
}

func TestCompleteEndsWhatHadNotStarted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the worker binary")
	}
	const n = 1500
	p := newPipeline(t)
	ctx := context.Background()
	must(t, p.DB.SetConcurrencyLimit(ctx, 10))
	p.StartProcess("worker", pauseWorkerEnv...)
	id := acceptedJob(t, p.postJob(p.token, jobQuery, strings.NewReader(p.jobBody(0, n)), true))
	if r := p.createV2("V2-LATE", map[string]any{"schedule_window_start": ts(time.Now().Add(time.Hour))}); r.Status != http.StatusAccepted && r.Status != http.StatusCreated {
		t.Fatalf("v2 create: %d %s", r.Status, r.Body)
	}
	p.waitCounter(p.token, id, "created", 100, 2*time.Minute)
	completeAt := p.setStatusAt(dataimport.SupplierComplete)
	v := p.waitJob(p.token, id, 2*time.Minute)
	created, cancelled := v.Counters["created"], v.Counters["cancelled"]
	if v.State != "COMPLETED" || created+cancelled != n || cancelled == 0 {
		t.Fatalf("job %s after Complete: %v", v.State, v.Counters)
	}
	checkCounters(t, v, map[string]int64{"received": n, "created": created, "cancelled": cancelled})
	if got := p.creationsSince(completeAt); got != 0 {
		t.Fatalf("%d creations started after Complete answered", got)
	}
	if got := p.count(`SELECT count(*) FROM accounts`); got != created {
		t.Fatalf("%d accounts, %d lines created", got, created)
	}
	for _, l := range p.jobResults(p.token, id, "all") {
		if l.Outcome == "cancelled" && l.Code != dataimport.CodeSupplierMigrationComplete {
			t.Fatalf("cancelled line %+v", l)
		}
	}
	// The scheduled v2 account ended with the status change, an hour
	// before its window.
	st := p.statusV2("V2-LATE")
	le, _ := st["latest_error"].(map[string]any)
	if st["status"] != "CANCELLED" || le["code"] != dataimport.CodeSupplierMigrationComplete {
		t.Fatalf("scheduled v2 account after Complete: %v", st)
	}
}

func TestErrorRateBrakePausesSupplier(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the worker binary")
	}
	const n = 800
	p := newPipeline(t)
	ctx := context.Background()
	must(t, p.DB.SetConcurrencyLimit(ctx, 20))
	// Every tenth account passes validation and is refused when stored.
	must(t, p.DB.Gorm().Exec(`ALTER TABLE accounts ADD CONSTRAINT test_refuse_fail CHECK (external_account_number NOT LIKE 'FAIL-%') NOT VALID`).Error)
	if _, err := p.DB.SetSupplierBrake(ctx, "DEMO_ENERGY", &dataimport.Brake{FailureBP: 500, Window: 200}); err != nil {
		t.Fatal(err)
	}
	var body strings.Builder
	for i := range n {
		ext := fmt.Sprintf("EXT-%04d", i)
		if i%10 == 5 {
			ext = fmt.Sprintf("FAIL-%04d", i)
		}
		body.WriteString(p.jobAccountLine(ext) + "\n")
	}
	p.StartProcess("worker", pauseWorkerEnv...)
	id := acceptedJob(t, p.postJob(p.token, jobQuery, strings.NewReader(body.String()), true))
	deadline := time.Now().Add(2 * time.Minute)
	var sup dataimport.Supplier
	for {
		var err error
		if sup, err = p.DB.SupplierByCode(ctx, "DEMO_ENERGY"); err != nil {
			t.Fatal(err)
		}
		if sup.Status == dataimport.SupplierPaused {
			break
		}
		if v := p.job(p.token, id); v.State != "PROCESSING" || time.Now().After(deadline) {
			t.Fatalf("brake never tripped: supplier %s, job %s %v", sup.Status, v.State, v.Counters)
		}
		time.Sleep(100 * time.Millisecond)
	}
	pr := sup.PauseReason
	if pr == nil || pr.Actor != "system" || pr.Window == nil || *pr.Window != 200 || pr.FailureRate == nil ||
		len(pr.TopCodes) == 0 || pr.TopCodes[0].Code != dataimport.CodeDataRefused {
		t.Fatalf("pause reason %+v", pr)
	}
	if rate, err := strconv.ParseFloat(*pr.FailureRate, 64); err != nil || rate <= 5 {
		t.Fatalf("measured failure rate %q, want above 5", *pr.FailureRate)
	}
	// The partner's feed says so (supplier.paused-v1).
	var paused []feedItem
	for deadline := time.Now().Add(30 * time.Second); len(paused) == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no supplier.paused-v1 in the partner's feed")
		}
		paused = readFeed(t, p.Stack, p.token, "type=supplier.paused-v1&limit=10").Events
	}
	r := p.As(p.token, http.MethodGet, feedPath+"?type=supplier.paused-v1&limit=10", nil)
	var raw struct {
		Events []struct {
			Data dataimport.SupplierPausedData `json:"data"`
		} `json:"events"`
	}
	r.Decode(&raw)
	if len(paused) != 1 || paused[0].Data.ImportSupplier != "DEMO_ENERGY" || len(raw.Events) != 1 ||
		raw.Events[0].Data.FailureRate != *pr.FailureRate || raw.Events[0].Data.Window != 200 ||
		len(raw.Events[0].Data.TopCodes) == 0 || raw.Events[0].Data.TopCodes[0].Code != dataimport.CodeDataRefused {
		t.Fatalf("supplier.paused-v1 in the feed: %s", r.Body)
	}
	rows, err := p.DB.AuditLog(ctx, time.Time{}, 50)
	if err != nil {
		t.Fatal(err)
	}
	var audited bool
	for _, r := range rows {
		if r.Action == postgres.AuditSupplierStatus && r.Actor == "system" && strings.Contains(string(r.After), `"failure_rate"`) &&
			strings.Contains(string(r.After), dataimport.CodeDataRefused) {
			audited = true
		}
	}
	if !audited {
		t.Fatalf("no audit row of the trip: %+v", rows)
	}
	if held := p.heldJob(id); held != dataimport.HeldSupplierPaused {
		t.Fatalf("job held = %v", held)
	}
	// Resuming is an operator's act; the job then finishes.
	p.setStatusAt(dataimport.SupplierOngoing)
	if _, err := p.DB.SetSupplierBrake(ctx, "DEMO_ENERGY", nil); err != nil {
		t.Fatal(err)
	}
	v := p.waitJob(p.token, id, 2*time.Minute)
	checkCounters(t, v, map[string]int64{"received": n, "created": n - n/10, "failed": n / 10})
}
