package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// A creation transaction of a Paused supplier creates nothing, and the
// hold leaves v1 IN_PROGRESS, v2 PENDING with the HELD event latest; once
// Ongoing again the attempt is claimed and created.
func TestPausedSupplierCreatesNothingAndHolds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.supplier("HOLD", false)
	in := e.prepare(s, "H-1", false, nil)
	e.must(e.db.SetSupplierStatus(e.ctx, s.Code, dataimport.SupplierPaused))
	if _, err := e.db.CreateAccount(e.ctx, in); !errors.Is(err, postgres.ErrSupplierNotOngoing) {
		t.Fatalf("create while Paused: %v, want ErrSupplierNotOngoing", err)
	}
	e.wantNothingWritten()
	for range 2 { // a second look records no second event
		held, err := e.db.HoldAttempt(e.ctx, in.ProcessID, in.Attempt)
		e.must(err)
		if !held {
			t.Fatal("attempt not held")
		}
	}
	var v1, v2 string
	e.scalar(&v1, `SELECT status FROM import_processes WHERE id = ?`, in.ProcessID)
	e.scalar(&v2, `SELECT v2_status FROM import_processes WHERE id = ?`, in.ProcessID)
	if v1 != "IN_PROGRESS" || v2 != "PENDING" {
		t.Fatalf("held: v1 %s v2 %s, want IN_PROGRESS PENDING", v1, v2)
	}
	ev, ok, err := e.db.LatestEvent(e.ctx, in.ProcessID)
	e.must(err)
	if !ok || ev.Event != dataimport.EventHeld {
		t.Fatalf("latest event %+v, want %s", ev, dataimport.EventHeld)
	}
	var helds int
	e.scalar(&helds, `SELECT count(*) FROM import_process_events WHERE process_id = ? AND event = ?`, in.ProcessID, dataimport.EventHeld)
	if helds != 1 {
		t.Fatalf("%d HELD events, want 1", helds)
	}
	if _, err := e.db.ClaimStart(e.ctx, in.ProcessID, in.Attempt); !errors.Is(err, postgres.ErrSupplierNotOngoing) {
		t.Fatalf("claim while Paused: %v", err)
	}
	e.must(e.db.SetSupplierStatus(e.ctx, s.Code, dataimport.SupplierOngoing))
	claimed, err := e.db.ClaimStart(e.ctx, in.ProcessID, in.Attempt)
	e.must(err)
	if !claimed {
		t.Fatal("not claimed once Ongoing")
	}
	res, err := e.db.CreateAccount(e.ctx, in)
	e.must(err)
	if res.PlatformAccountNumber == "" {
		t.Fatal("no account once Ongoing")
	}
}

// A pause waits for a creation transaction under way (it finishes), and
// none starts after the pause committed.
func TestPauseWaitsForCreationUnderWay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.supplier("HOLDRACE", false)
	in := e.prepare(s, "R-1", false, nil)
	// Another transaction holding the supplier's KEY SHARE lock stands for a
	// creation transaction under way.
	tx := e.g.Begin()
	e.must(tx.Exec(`SELECT 1 FROM import_suppliers WHERE id = ? FOR KEY SHARE`, s.ID).Error)
	done := make(chan error, 1)
	go func() { done <- e.db.SetSupplierStatus(e.ctx, s.Code, dataimport.SupplierPaused) }()
	select {
	case err := <-done:
		t.Fatalf("pause answered (%v) while a creation transaction held the supplier", err)
	case <-time.After(300 * time.Millisecond):
	}
	e.must(tx.Commit().Error)
	e.must(<-done)
	if _, err := e.db.CreateAccount(e.ctx, in); !errors.Is(err, postgres.ErrSupplierNotOngoing) {
		t.Fatalf("create after the pause answered: %v", err)
	}
}

// Complete ends an attempt that had not created its account: CANCELLED,
// latest_error import_supplier_migration_complete.
func TestCompleteEndsWhatHasNotStarted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.supplier("DONE", false)
	in := e.prepare(s, "C-1", false, nil)
	e.must(e.db.SetSupplierStatus(e.ctx, s.Code, dataimport.SupplierComplete))
	e.must(e.db.EndOnComplete(e.ctx, in.ProcessID, in.Attempt, s.Code))
	p, err := e.db.Process(e.ctx, s.ID, "C-1")
	e.must(err)
	if p.V2Status != dataimport.V2Cancelled || p.Status != dataimport.StatusUnknown {
		t.Fatalf("ended: v1 %s v2 %s, want UNKNOWN CANCELLED", p.Status, p.V2Status)
	}
	if p.LatestError == nil || p.LatestError.Code != dataimport.CodeSupplierMigrationComplete {
		t.Fatalf("latest_error %+v, want %s", p.LatestError, dataimport.CodeSupplierMigrationComplete)
	}
	out, err := e.db.Outcome(e.ctx, in.ProcessID, in.Attempt)
	e.must(err)
	if out.Outcome != postgres.OutcomeCancelled {
		t.Fatalf("attempt outcome %s", out.Outcome)
	}
}
