package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

const v2Accounts = "/v2/data-import/accounts/"

func (p *pipeline) createV2(external string, params map[string]any) testutil.Response {
	p.TB.Helper()
	body := `{"payload": ` + p.account(external)
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			p.TB.Fatal(err)
		}
		body += `, "task_params": ` + string(b)
	}
	return p.As(p.token, http.MethodPost, v2Accounts, body+"}")
}

func (p *pipeline) statusV2(external string) map[string]any {
	p.TB.Helper()
	r := p.As(p.token, http.MethodGet, v2Accounts+"DEMO_ENERGY/"+external+"/", nil)
	if r.Status != http.StatusOK {
		p.TB.Fatalf("v2 status of %s: %d %s", external, r.Status, r.Body)
	}
	return r.JSON()
}

func (p *pipeline) eventsV2(external string) []string {
	p.TB.Helper()
	r := p.As(p.token, http.MethodGet, v2Accounts+"DEMO_ENERGY/"+external+"/events/", nil)
	if r.Status != http.StatusOK {
		p.TB.Fatalf("v2 events of %s: %d %s", external, r.Status, r.Body)
	}
	var evs []struct{ Event string }
	r.Decode(&evs)
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Event
	}
	return out
}

// waitV2 polls the v2 status until it leaves PENDING/IN_PROGRESS.
func (p *pipeline) waitV2(external string, within time.Duration) map[string]any {
	p.TB.Helper()
	deadline := time.Now().Add(within)
	for {
		st := p.statusV2(external)
		if s := st["status"]; s != "PENDING" && s != "IN_PROGRESS" {
			return st
		}
		if time.Now().After(deadline) {
			p.TB.Fatalf("%s still %v after %v", external, st["status"], within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func TestV2HappyPathSeenThroughV1(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker()
	if r := p.As(p.token, http.MethodPost, v2Accounts+"validate/", `{"payload": `+p.account("EXT-1")+`}`); r.Status != http.StatusOK || len(r.Body) != 0 {
		t.Fatalf("v2 validate: %d %q", r.Status, r.Body)
	}
	r := p.createV2("EXT-1", nil)
	if r.Status != http.StatusCreated || r.JSON()["status"] != "PENDING" || r.JSON()["status_url"] != v2Accounts+"DEMO_ENERGY/EXT-1/" {
		t.Fatalf("v2 create: %d %s", r.Status, r.Body)
	}
	st := p.waitV2("EXT-1", 15*time.Second)
	number, _ := st["platform_account_number"].(string)
	if st["status"] != "PROCESSED" || !platformNumberRe.MatchString(number) || st["scheduled"] != true {
		t.Fatalf("v2 status: %v", st)
	}
	if le, _ := st["latest_event"].(map[string]any); le["event"] != "EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED" {
		t.Fatalf("latest event: %v", st["latest_event"])
	}
	if v1 := p.status("EXT-1"); v1["status"] != "COMPLETED" || v1["platform_account_number"] != number {
		t.Fatalf("v1 status: %v", v1)
	}
	list := p.As(p.token, http.MethodGet, "/v1/data-import/imported-account-import-processes/DEMO_ENERGY/", nil)
	var recs []map[string]any
	list.Decode(&recs)
	if len(recs) != 1 || recs[0]["platform_account_number"] != number {
		t.Fatalf("imported list: %s", list.Body)
	}
	// The whole timeline, in order.
	want := []string{"EVENT_ACCOUNT_IMPORT_PROCESS_STAGED", "EVENT_ACCOUNT_IMPORT_PROCESS_SCHEDULED",
		"EVENT_ACCOUNT_IMPORT_PROCESS_STARTED", "EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED"}
	if got := p.eventsV2("EXT-1"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	// Created: both views refuse another creation, each in its own words.
	if r := p.createV2("EXT-1", nil); r.Status != http.StatusBadRequest || r.JSON()["code"] != "account_import_process_already_imported" ||
		r.JSON()["platform_account_number"] != number {
		t.Fatalf("v2 create of an imported account: %d %s", r.Status, r.Body)
	}
	if r := p.create("EXT-1", nil); r.Status != http.StatusBadRequest || r.JSON()["code"] != "account_already_imported" {
		t.Fatalf("v1 create of an imported account: %d %s", r.Status, r.Body)
	}
	// A v1 creation is seen through v2 with the same timeline.
	p.stage("EXT-2")
	if st := p.statusV2("EXT-2"); st["status"] != "PENDING" || st["scheduled"] != false {
		t.Fatalf("v1-staged process through v2: %v", st)
	}
	if r := p.create("EXT-2", nil); r.Status != http.StatusCreated {
		t.Fatalf("v1 create: %d %s", r.Status, r.Body)
	}
	if st := p.statusV2("EXT-2"); st["status"] != "PROCESSED" {
		t.Fatalf("v1-created process through v2: %v", st)
	}
}

func TestV2WindowRules(t *testing.T) {
	p := newPipeline(t)
	now := time.Now()
	for _, tc := range []struct {
		name   string
		params map[string]any
		attr   string
	}{
		{"start in the past", map[string]any{"schedule_window_start": ts(now.Add(-time.Hour))}, "task_params.schedule_window_start"},
		{"end before start", map[string]any{"schedule_window_start": ts(now.Add(time.Hour)), "schedule_window_end": ts(now.Add(30 * time.Minute))}, "task_params.schedule_window_end"},
		{"end 5 days ahead", map[string]any{"schedule_window_end": ts(now.Add(5 * 24 * time.Hour))}, "task_params.schedule_window_end"},
		{"not a datetime", map[string]any{"schedule_window_start": "tomorrow"}, "task_params.schedule_window_start"},
		{"unknown parameter", map[string]any{"priority": 1}, "task_params.priority"},
	} {
		r := p.createV2("EXT-W", tc.params)
		if r.Status != http.StatusBadRequest || r.JSON()["code"] != "invalid_payload" {
			t.Fatalf("%s: %d %s", tc.name, r.Status, r.Body)
		}
		if _, ok := fieldErrorsOf(t, r)[tc.attr]; !ok {
			t.Fatalf("%s: no error at %s: %s", tc.name, tc.attr, r.Body)
		}
	}
	if n := p.count(`SELECT count(*) FROM import_processes`); n != 0 {
		t.Fatalf("refused requests left %d processes", n)
	}
	// Payload errors keep v1's attr paths and come with the window's.
	bad := `{"payload": {"import_supplier": "DEMO_ENERGY", "external_account_number": "X", "sales_channel": "DIRECT", "customers": [{"given_name": "A", "family_name": "B", "landline": "12"}], "supply_addresses": []},
		"task_params": {"schedule_window_start": "` + ts(now.Add(-time.Hour)) + `"}}`
	r := p.As(p.token, http.MethodPost, v2Accounts, bad)
	errs := fieldErrorsOf(t, r)
	if r.JSON()["code"] != "account_failed_validation" || errs["customers.0.landline"] == "" || errs["task_params.schedule_window_start"] == "" {
		t.Fatalf("payload and window errors: %d %s", r.Status, r.Body)
	}
}

func fieldErrorsOf(t *testing.T, r testutil.Response) map[string]string {
	t.Helper()
	var body struct{ Errors []struct{ Code, Attr string } }
	r.Decode(&body)
	out := map[string]string{}
	for _, e := range body.Errors {
		out[e.Attr] = e.Code
	}
	return out
}

func TestV2WindowInTheFuture(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker()
	start := time.Now().Add(3 * time.Second).Truncate(time.Second).Add(time.Second)
	if r := p.createV2("EXT-1", map[string]any{"schedule_window_start": ts(start), "schedule_window_end": ts(start.Add(time.Minute))}); r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	for time.Until(start) > 300*time.Millisecond {
		st := p.statusV2("EXT-1")
		if st["status"] != "PENDING" || st["schedule_window_start"] != ts(start) {
			t.Fatalf("before the window: %v", st)
		}
		if v1 := p.status("EXT-1"); v1["status"] != "IN_PROGRESS" {
			t.Fatalf("v1 before the window: %v", v1)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st := p.waitV2("EXT-1", 20*time.Second); st["status"] != "PROCESSED" {
		t.Fatalf("after the window: %v", st)
	}
	var created time.Time
	must(t, p.DB.Gorm().Raw(`SELECT created_at FROM accounts`).Row().Scan(&created))
	if created.Before(start) {
		t.Fatalf("account created at %v, before its window opened at %v", created, start)
	}
}

func TestV2CapDelaysNeverRefuses(t *testing.T) {
	p := newPipeline(t)
	must(t, p.DB.SetConcurrencyLimit(context.Background(), 1))
	p.StartWorker()
	// Slow every creation down so a cap of 1 cannot get through 20 in the window.
	must(t, p.DB.Gorm().Exec(`CREATE FUNCTION test_slow() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_sleep(0.4); RETURN NEW; END $$;
		CREATE TRIGGER test_slow BEFORE INSERT ON accounts FOR EACH ROW EXECUTE FUNCTION test_slow()`).Error)
	end := time.Now().Add(3 * time.Second)
	const n = 20
	for i := range n {
		if r := p.createV2(fmt.Sprintf("EXT-%02d", i), map[string]any{"schedule_window_end": ts(end)}); r.Status != http.StatusCreated {
			t.Fatalf("create %d: %d %s", i, r.Status, r.Body)
		}
	}
	var peak atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if c, err := p.DB.CountInProgress(context.Background()); err == nil && c > peak.Load() {
				peak.Store(c)
			}
		}
	}()
	outcomes := map[string]int{}
	for i := range n {
		st := p.waitV2(fmt.Sprintf("EXT-%02d", i), 30*time.Second)
		key := fmt.Sprint(st["status"])
		if le, _ := st["latest_error"].(map[string]any); le != nil {
			key += " " + fmt.Sprint(le["code"], " ", le["domain"])
		}
		outcomes[key]++
	}
	close(stop)
	wg.Wait()
	if peak.Load() > 1 {
		t.Errorf("%d accounts in progress at once under a cap of 1", peak.Load())
	}
	if outcomes["PROCESSED"] == 0 || outcomes["ERRORED schedule_window_expired scheduling"] == 0 ||
		outcomes["PROCESSED"]+outcomes["ERRORED schedule_window_expired scheduling"] != n {
		t.Errorf("outcomes %v: want every account processed or expired, some of each", outcomes)
	}
	if got := p.count(`SELECT count(*) FROM accounts`); got != int64(outcomes["PROCESSED"]) {
		t.Errorf("%d accounts for %d processed", got, outcomes["PROCESSED"])
	}
}

func TestV2Cancel(t *testing.T) {
	p := newPipeline(t)
	start := time.Now().Add(2 * time.Second)
	if r := p.createV2("EXT-1", map[string]any{"schedule_window_start": ts(start)}); r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	p.StartWorker()
	for range 2 { // cancelling twice is 200 both times
		r := p.As(p.token, http.MethodPost, v2Accounts+"DEMO_ENERGY/EXT-1/cancel/", nil)
		if r.Status != http.StatusOK || r.JSON()["status"] != "CANCELLED" {
			t.Fatalf("cancel: %d %s", r.Status, r.Body)
		}
	}
	time.Sleep(time.Until(start) + 2*time.Second) // past the window's start: the task ran and did nothing
	if st := p.statusV2("EXT-1"); st["status"] != "CANCELLED" {
		t.Fatalf("after the window: %v", st)
	}
	if v1 := p.status("EXT-1"); v1["status"] != "UNKNOWN" {
		t.Fatalf("v1 of a cancelled process: %v", v1)
	}
	if n := p.count(`SELECT count(*) FROM accounts`); n != 0 {
		t.Fatalf("%d accounts after cancel", n)
	}
	// Running (a v1 create holds its slot at once): not cancellable.
	p.stage("EXT-2")
	must(t, p.DB.SetConcurrencyLimit(context.Background(), 0))
	if r := p.create("EXT-2", nil, "Prefer", "respond-async"); r.Status != http.StatusAccepted && r.Status != http.StatusCreated {
		t.Fatalf("v1 create: %d %s", r.Status, r.Body)
	}
	if st := p.statusV2("EXT-2"); st["status"] == "IN_PROGRESS" {
		r := p.As(p.token, http.MethodPost, v2Accounts+"DEMO_ENERGY/EXT-2/cancel/", nil)
		if r.Status != http.StatusConflict || r.JSON()["code"] != "import_process_not_cancellable" {
			t.Fatalf("cancel while running: %d %s", r.Status, r.Body)
		}
	}
	p.waitV2("EXT-2", 15*time.Second)
	r := p.As(p.token, http.MethodPost, v2Accounts+"DEMO_ENERGY/EXT-2/cancel/", nil)
	if r.Status != http.StatusConflict || r.JSON()["code"] != "import_process_not_cancellable" || r.JSON()["status"] != "PROCESSED" {
		t.Fatalf("cancel when processed: %d %s", r.Status, r.Body)
	}
	if r := p.As(p.token, http.MethodPost, v2Accounts+"DEMO_ENERGY/NOPE/cancel/", nil); r.Status != http.StatusNotFound {
		t.Fatalf("cancel of an unknown account: %d %s", r.Status, r.Body)
	}
}

func TestV2DryRun(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker()
	if r := p.createV2("EXT-1", map[string]any{"is_dry_run": true}); r.Status != http.StatusCreated {
		t.Fatalf("dry run: %d %s", r.Status, r.Body)
	}
	if st := p.waitV2("EXT-1", 15*time.Second); st["status"] != "DRY_RUN_SUCCEEDED" {
		t.Fatalf("dry run: %v", st)
	}
	for _, table := range []string{"accounts", "account_customers", "supply_addresses", "meter_points", "agreements", "statements"} {
		if n := p.count(`SELECT count(*) FROM ` + table); n != 0 {
			t.Fatalf("dry run left %d rows in %s", n, table)
		}
	}
	// The rollback leaves only the dry-run event: no PROCESSED.
	want := []string{"EVENT_ACCOUNT_IMPORT_PROCESS_STAGED", "EVENT_ACCOUNT_IMPORT_PROCESS_SCHEDULED",
		"EVENT_ACCOUNT_IMPORT_PROCESS_STARTED", "EVENT_ACCOUNT_IMPORT_PROCESS_DRY_RUN_SUCCEEDED"}
	if got := p.eventsV2("EXT-1"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	// Staged data that no longer validates: DRY_RUN_ERRORED with the errors.
	must(t, p.DB.Gorm().Exec(`CREATE FUNCTION test_corrupt() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN NEW.payload = jsonb_set(NEW.payload, '{customers,0,mobile}', '"12"'); RETURN NEW; END $$;
		CREATE TRIGGER test_corrupt BEFORE INSERT ON import_process_versions FOR EACH ROW EXECUTE FUNCTION test_corrupt()`).Error)
	if r := p.createV2("EXT-2", map[string]any{"is_dry_run": true}); r.Status != http.StatusCreated {
		t.Fatalf("dry run: %d %s", r.Status, r.Body)
	}
	st := p.waitV2("EXT-2", 15*time.Second)
	le, _ := st["latest_error"].(map[string]any)
	if st["status"] != "DRY_RUN_ERRORED" || le["code"] != "account_failed_validation" || le["domain"] != "validation" {
		t.Fatalf("invalid dry run: %v", st)
	}
	evs := p.eventsV2("EXT-2")
	if evs[len(evs)-1] != "EVENT_ACCOUNT_IMPORT_PROCESS_DRY_RUN_ERRORED" {
		t.Fatalf("events %v", evs)
	}
}

func TestV2ScheduledTasksSurviveFlushall(t *testing.T) {
	p := newPipeline(t)
	const n = 100
	// Whole seconds, as ts sends it: the window opens at this instant.
	start := time.Now().Add(4 * time.Second).Truncate(time.Second)
	end := start.Add(40 * time.Second)
	for i := range n {
		if r := p.createV2(fmt.Sprintf("EXT-%03d", i), map[string]any{"schedule_window_start": ts(start), "schedule_window_end": ts(end)}); r.Status != http.StatusCreated {
			t.Fatalf("create %d: %d %s", i, r.Status, r.Body)
		}
	}
	must(t, p.API.Redis.FlushAll(context.Background()).Err()) // every scheduled task is gone from Redis
	p.StartWorker()                                           // its reconciler schedules them again from Postgres
	for i := range n {
		if st := p.waitV2(fmt.Sprintf("EXT-%03d", i), time.Until(end)+10*time.Second); st["status"] != "PROCESSED" {
			t.Fatalf("EXT-%03d: %v", i, st)
		}
	}
	var early int64
	must(t, p.DB.Gorm().Raw(`SELECT count(*) FROM accounts WHERE created_at < ?`, start).Scan(&early).Error)
	if early != 0 {
		t.Fatalf("%d accounts created before their window opened", early)
	}
}

// A v2 create retried with its Idempotency-Key is answered from the first
// one: one staged version, one scheduled attempt.
func TestV2CreateIdempotencyKey(t *testing.T) {
	p := newPipeline(t)
	body := `{"payload": ` + p.account("EXT-1") + `, "task_params": {"schedule_window_start": "` + ts(time.Now().Add(time.Hour)) + `"}}`
	first := p.As(p.token, http.MethodPost, v2Accounts, body, "Idempotency-Key", "v2-create-1")
	again := p.As(p.token, http.MethodPost, v2Accounts, body, "Idempotency-Key", "v2-create-1")
	if first.Status != http.StatusCreated || again.Status != http.StatusCreated || string(again.Body) != string(first.Body) ||
		again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s / %d %s %v", first.Status, first.Body, again.Status, again.Body, again.Header)
	}
	if n := p.count(`SELECT count(*) FROM import_process_versions`); n != 1 {
		t.Fatalf("%d staged versions, want 1", n)
	}
	if n := p.count(`SELECT attempt FROM import_processes`); n != 1 {
		t.Fatalf("attempt %d, want 1", n)
	}
}
