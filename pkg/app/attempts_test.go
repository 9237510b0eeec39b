package app_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/app"
	"github.com/gridshift/dataimport/pkg/queue"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// A create joins a running attempt only when both are the same kind: a real
// create must never be answered by a dry run's rollback (and leave no
// account), nor a dry run by a real account.
func TestDryRunAndRealCreateDoNotJoin(t *testing.T) {
	p := newPipeline(t)
	p.stage("EXT-DRY")
	p.stage("EXT-REAL")
	// No worker yet: both attempts wait in the queue.
	if r := p.create("EXT-DRY", map[string]any{"dry_run": true}, "Prefer", "respond-async"); r.Status != http.StatusAccepted {
		t.Fatalf("dry run: %d %s", r.Status, r.Body)
	}
	if r := p.create("EXT-REAL", nil, "Prefer", "respond-async"); r.Status != http.StatusAccepted {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	for _, tc := range []struct {
		external string
		dryRun   bool
	}{{"EXT-DRY", false}, {"EXT-REAL", true}} {
		r := p.create(tc.external, map[string]any{"dry_run": tc.dryRun})
		if r.Status != http.StatusBadRequest || r.JSON()["code"] != "account_import_in_progress" {
			t.Fatalf("%s, dry_run=%v during the other kind: %d %s", tc.external, tc.dryRun, r.Status, r.Body)
		}
	}
	// The same kind joins the running attempt and gets its answer.
	joined := make(chan string, 2)
	go func() {
		r := p.create("EXT-DRY", map[string]any{"dry_run": true})
		joined <- fmt.Sprintf("dry run %d %v", r.Status, r.JSON()["code"])
	}()
	go func() {
		r := p.create("EXT-REAL", nil)
		joined <- fmt.Sprintf("create %d %v", r.Status, r.JSON()["code"])
	}()
	time.Sleep(300 * time.Millisecond) // let both requests reach their wait
	p.StartWorker()
	// (A request slower than the worker sees the finished attempt instead:
	// the account already imported, or a fresh dry run; the same answers.)
	got := map[string]bool{<-joined: true, <-joined: true}
	if !got["dry run 400 dry_run_rolled_back"] || !(got["create 201 <nil>"] || got["create 400 account_already_imported"]) {
		t.Fatalf("joined answers: %v", got)
	}
	if n := p.count(`SELECT count(*) FROM accounts`); n != 1 {
		t.Fatalf("%d accounts, want 1 (EXT-REAL only)", n)
	}
	// The refused dry run of EXT-DRY is now free to run as a real create.
	if r := p.create("EXT-DRY", nil); r.Status != http.StatusCreated {
		t.Fatalf("create after the dry run: %d %s", r.Status, r.Body)
	}
}

// A slot taken for an attempt that then does not start is given back by the
// request itself, at once: under a cap of 1 the next account is not refused
// for it, and no slot waits for the reconciler's sweep.
func TestSlotOfAnAttemptThatDidNotStartIsReleased(t *testing.T) {
	p := newPipeline(t, func(c *testutil.StackConfig) { c.ProcessWait = 2 * time.Second })
	must(t, p.DB.SetConcurrencyLimit(context.Background(), 1))
	p.stage("EXT-1")
	p.stage("EXT-2")
	// The process changes between the handler's read and its conditional
	// start (here: Postgres skips the update, as a concurrent change would).
	must(t, p.DB.Gorm().Exec(`
		CREATE FUNCTION test_refuse_start() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN IF NEW.status = 'IN_PROGRESS' THEN RETURN NULL; END IF; RETURN NEW; END $$;
		CREATE TRIGGER test_refuse_start BEFORE UPDATE ON import_processes
		   FOR EACH ROW EXECUTE FUNCTION test_refuse_start()`).Error)
	r := p.create("EXT-1", nil)
	if r.Status != http.StatusServiceUnavailable || r.JSON()["code"] != "service_unavailable" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("create whose attempt could not start: %d %s", r.Status, r.Body)
	}
	slots := queue.NewSemaphore(p.API.Redis, app.SlotsKey, time.Minute)
	if n, err := slots.InUse(context.Background()); err != nil || n != 0 {
		holders, _ := slots.Holders(context.Background())
		t.Fatalf("slots in use after the refused start: %d %v (%v)", n, holders, err)
	}
	must(t, p.DB.Gorm().Exec(`DROP TRIGGER test_refuse_start ON import_processes`).Error)
	if r := p.create("EXT-2", nil, "Prefer", "respond-async"); r.Status != http.StatusAccepted {
		t.Fatalf("next account under a cap of 1: %d %s", r.Status, r.Body)
	}
}
