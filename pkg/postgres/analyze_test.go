package postgres_test

import (
	"slices"
	"testing"
	"time"
)

// TestAnalyzeGrownTables: a table that grew since its statistics were taken
// (here never, as when autovacuum is off) is analyzed, so the planner sees
// its size; once analyzed it no longer qualifies.
func TestAnalyzeGrownTables(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Autovacuum (where it is on) must not analyze it first.
	e.must(e.g.Exec(`ALTER TABLE operations_teams SET (autovacuum_enabled = false)`).Error)
	e.must(e.g.Exec(`INSERT INTO operations_teams (name) SELECT 'Team ' || i FROM generate_series(1, 5000) i`).Error)
	var before float64
	e.scalar(&before, `SELECT reltuples FROM pg_class WHERE oid = 'operations_teams'::regclass`)
	if before > 0 {
		t.Fatalf("operations_teams already has statistics (%v rows)", before)
	}
	// The activity statistics reach the shared counters within a second or so.
	deadline := time.Now().Add(10 * time.Second)
	for {
		names, err := e.db.AnalyzeGrownTables(e.ctx)
		e.must(err)
		if slices.Contains(names, "operations_teams") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("operations_teams never analyzed; analyzed %v", names)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var after float64
	e.scalar(&after, `SELECT reltuples FROM pg_class WHERE oid = 'operations_teams'::regclass`)
	if after < 5000 {
		t.Fatalf("planner statistics say %v rows after ANALYZE, want ≥ 5000", after)
	}
	names, err := e.db.AnalyzeGrownTables(e.ctx)
	e.must(err)
	if slices.Contains(names, "operations_teams") {
		t.Fatalf("operations_teams analyzed again without changes: %v", names)
	}
}
