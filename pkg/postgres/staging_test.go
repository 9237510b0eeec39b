package postgres_test

import (
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Concurrent staging shares statements (stage_batch.go). Against real
// Postgres: distinct accounts, one account staged many times at once, and an
// account being imported, all in one burst. Every call gets its own true
// answer, and the stored versions are exactly the ones answered.
func TestStageConcurrentBurst(t *testing.T) {
	e := newEnv(t)
	sup := e.supplier("BURST_ENERGY", false)
	other := e.supplier("BURST_OTHER", false)
	busy := e.stage(sup, "BUSY-1", nil)
	e.start(busy, false)

	type call struct {
		sup      dataimport.Supplier
		external string
	}
	var calls []call
	for i := range 60 {
		calls = append(calls, call{sup, fmt.Sprintf("DIST-%02d", i)})
	}
	for range 12 {
		calls = append(calls, call{sup, "SAME-1"})
	}
	calls = append(calls, call{other, "DIST-00"}) // same number, other supplier: another account
	for range 3 {
		calls = append(calls, call{sup, "BUSY-1"})
	}

	type answer struct {
		call
		version int
		created bool
		err     error
	}
	answers := make([]answer, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		body := payload(t, c.sup.Code, c.external, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.db.Stage(e.ctx, c.sup, c.external, body)
			answers[i] = answer{call: c, version: res.Version, created: res.Created, err: err}
		}()
	}
	wg.Wait()

	var sameVersions []int
	created := 0
	for _, a := range answers {
		switch {
		case a.external == "BUSY-1":
			if dataimport.ErrorCode(a.err) != dataimport.CodeImportInProgress {
				t.Fatalf("staging an account being imported: %v, want %s", a.err, dataimport.CodeImportInProgress)
			}
		case a.err != nil:
			t.Fatalf("%s/%s: %v", a.sup.Code, a.external, a.err)
		case a.external == "SAME-1":
			sameVersions = append(sameVersions, a.version)
			if a.created {
				created++
			}
		case a.version != 1 || !a.created:
			t.Fatalf("%s/%s: version %d created %v, want 1 true", a.sup.Code, a.external, a.version, a.created)
		}
	}
	sort.Ints(sameVersions)
	if fmt.Sprint(sameVersions) != "[1 2 3 4 5 6 7 8 9 10 11 12]" || created != 1 {
		t.Fatalf("SAME-1 answered versions %v (%d created), want 1..12 once each, one created", sameVersions, created)
	}

	var stored []int
	e.must(e.g.Raw(`SELECT v.version FROM import_process_versions v JOIN import_processes p ON p.id = v.process_id
		WHERE p.external_account_number = 'SAME-1' ORDER BY v.version`).Scan(&stored).Error)
	var staged int
	e.scalar(&staged, `SELECT staged_version FROM import_processes WHERE external_account_number = 'SAME-1'`)
	if fmt.Sprint(stored) != "[1 2 3 4 5 6 7 8 9 10 11 12]" || staged != 12 {
		t.Fatalf("SAME-1 stored versions %v, staged_version %d", stored, staged)
	}
	var busyVersions int
	e.scalar(&busyVersions, `SELECT count(*) FROM import_process_versions WHERE process_id = ?`, busy)
	if busyVersions != 1 {
		t.Fatalf("the account being imported has %d versions, want its one", busyVersions)
	}
	// 60 distinct + SAME-1 + the other supplier's DIST-00 + BUSY-1.
	if n := e.count("import_processes"); n != 63 {
		t.Fatalf("%d processes, want 63", n)
	}
	if n := e.count("import_process_versions"); n != 60+12+1+1 {
		t.Fatalf("%d versions, want %d", n, 60+12+1+1)
	}
	// Each payload went to its own account.
	var mismatched int
	e.scalar(&mismatched, `SELECT count(*) FROM import_process_versions v JOIN import_processes p ON p.id = v.process_id
		WHERE v.payload->>'external_account_number' <> p.external_account_number`)
	if mismatched != 0 {
		t.Fatalf("%d versions hold another account's payload", mismatched)
	}
}
