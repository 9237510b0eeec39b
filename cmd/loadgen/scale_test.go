package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTenthRates: accounts/s per tenth of the accounts, timed from the first
// finished account, so an upload before creation does not count.
func TestTenthRates(t *testing.T) {
	var steady, slowing []scaleSample
	// 5 s of upload, then 10 accounts/s for 100 s.
	for s := 0; s <= 105; s++ {
		done := int64(max(0, s-5) * 10)
		steady = append(steady, scaleSample{T: float64(s), Done: done})
	}
	// 20/s for the first 500 accounts, then 10/s.
	for s, done := 0, int64(0); done < 1000; s++ {
		slowing = append(slowing, scaleSample{T: float64(s), Done: done})
		if done < 500 {
			done += 20
		} else {
			done += 10
		}
	}
	slowing = append(slowing, scaleSample{T: float64(len(slowing)), Done: 1000})
	for _, tc := range []struct {
		name    string
		samples []scaleSample
		want    []float64
	}{
		{"steady", steady, []float64{10, 10, 10, 10, 10, 10, 10, 10, 10, 10}},
		{"slowing", slowing, []float64{20, 20, 20, 20, 20, 10, 10, 10, 10, 10}},
	} {
		got := tenthRates(tc.samples, 1000)
		if len(got) != 10 {
			t.Fatalf("%s: %v", tc.name, got)
		}
		for i := range got {
			// The first tenth starts at the first account, 1/rate after the
			// first second of creation.
			if math.Abs(got[i]-tc.want[i]) > 0.25 {
				t.Errorf("%s: tenth %d = %.2f, want %.0f (all %v)", tc.name, i+1, got[i], tc.want[i], got)
			}
		}
	}
	if got := tenthRates(nil, 1000); got != nil {
		t.Errorf("no samples: %v", got)
	}
}

// TestPhaseP99s: the per-second status p99s split at the last upload's
// acceptance, seconds without reads left out.
func TestPhaseP99s(t *testing.T) {
	res := &scaleResult{UploadSeconds: 10}
	for i := range 30 {
		s := scaleSample{T: float64(i), StatusN: 200, StatusP99: float64(i)}
		if i == 3 || i == 25 {
			s.StatusN, s.StatusP99 = 0, 1000 // no reads: not a second of evidence
		}
		res.Samples = append(res.Samples, s)
	}
	up, after, ok := phaseP99s(res)
	// While uploading: 0,1,2,4,...,9 (9 seconds); after: 10..29 without 25 (19).
	if !ok || up != [2]float64{5, 9} || after != [2]float64{19, 28} {
		t.Fatalf("phaseP99s = %v, %v, %v; want [5 9], [19 28], true", up, after, ok)
	}
	if _, _, ok := phaseP99s(&scaleResult{UploadSeconds: 10}); ok {
		t.Fatal("a run without samples has phases")
	}
}

// The report's floor, bookkeeping and status-answer rows come from the
// run's figures: end to end ÷ floor, bookkeeping ÷ account bytes when the
// jobs complete and once they are compacted, and the account reads that
// answered 404 after their job was accepted.
func TestScaleReportRows(t *testing.T) {
	res := &scaleResult{
		Accounts: 1000, TotalSeconds: 50, UploadSeconds: 10, Counters: map[string]int{"created": 1000},
		StatusP99Uploading: 12.5, StatusP99After: 4.25,
		JobStatusCodes: map[int]int{200: 400}, AccountStatusCodes: map[int]int{404: 3, 200: 397, 0: 1},
		AccountReadsAccepted: 380, AccountNotFoundAccepted: 3, AccountsPerSecond: 20, Ceiling: pgbenchResult{AccountTPS: 10},
		Floor:       &floorResult{Tables: accountTables, RestoreSeconds: 8, RestoredAccounts: 1000, RestoreJobs: 2},
		Bookkeeping: &bookkeepingResult{Accounts: 1000, AccountBytes: 8 << 20, BookkeepingBytes: 2 << 20, Tables: []tableGrowth{{Table: "accounts", Account: true, Bytes: 8 << 20}, {Table: "import_processes", Bytes: 2 << 20}}},
		Compacted: &compactedResult{Jobs: 3, CompactedAtCompletion: 1, Compacted: 3, CompactSeconds: 12.34, VacuumSeconds: 5.67, VacuumedTables: 31,
			Bookkeeping: bookkeepingResult{Accounts: 1000, AccountBytes: 8 << 20, BookkeepingBytes: 3 << 19, Tables: []tableGrowth{{Table: "accounts", Account: true, Bytes: 8 << 20}, {Table: "import_process_events", Bytes: 1 << 20}, {Table: "import_processes", Bytes: 1 << 19}}}},
	}
	dir := t.TempDir()
	if err := writeScale(res, dir); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "scale.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(raw)
	for _, want := range []string{
		"| **8.0 s**, 125.0 accounts/s (1000 accounts restored) |",
		"| end to end ÷ floor (goal ≤ 8) | **6.2** |",
		"| **12.5 ms** / **4.2 ms** |",
		"| job status: 200 ×400; account v1 status: 0 ×1, 200 ×397, 404 ×3 |",
		"(goal 0) | **3** of 380 such reads |",
		"| 8.2 KB |", "| 2.0 KB |",
		"| bookkeeping KB ÷ account KB when the jobs complete, before compaction (1 of 3 jobs already compacted by the worker) | **0.25** |",
		"`VACUUM FULL` of the 31 bookkeeping tables | 12.3 s / 5.7 s (3 of 3 jobs compacted) |",
		"| once compacted: account tables / bookkeeping per account | 8.2 KB / 1.5 KB |",
		"| bookkeeping KB ÷ account KB once the jobs are compacted, without dead rows (goal ≤ 0.5) | **0.19** |",
		"| import_processes | bookkeeping | 2.05 | 2.0 |",
		"## Where the bytes are once the jobs are compacted",
		"| import_process_events | bookkeeping | 1.02 | 1.0 |", "| import_processes | bookkeeping | 0.51 | 0.5 |",
		"batches of 500 lines 20ms apart", "creation only inserts into them.",
		"The physical floor is", "The ceiling is `pgbench`", "| ratio to the ceiling | **2.00** |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	// A run from before these figures renders without their rows.
	old := &scaleResult{Accounts: 1000, TotalSeconds: 50, Counters: map[string]int{"created": 1000}}
	if err := writeScale(old, dir); err != nil {
		t.Fatal(err)
	}
	raw, _ = os.ReadFile(filepath.Join(dir, "scale.md"))
	for _, absent := range []string{"floor (goal", "bookkeeping KB", "404 after", "ceiling", "physical floor", "compact"} {
		if strings.Contains(string(raw), absent) {
			t.Errorf("a run without the figure reports %q", absent)
		}
	}
	// A run that skipped the compacted measure (BENCH_COMPACTED=0) says the
	// goal was not measured, and has no compacted rows; one whose compacted
	// measure saw older transactions or changed account rows says so.
	res.Compacted = nil
	if err := writeScale(res, dir); err != nil {
		t.Fatal(err)
	}
	raw, _ = os.ReadFile(filepath.Join(dir, "scale.md"))
	if !strings.Contains(string(raw), "(the goal ≤ 0.5 is for compacted jobs: not measured) | **0.25** |") {
		t.Errorf("a run without the compacted measure:\n%s", raw)
	}
	for _, absent := range []string{"once compacted", "once the jobs are compacted", "VACUUM FULL"} {
		if strings.Contains(string(raw), absent) {
			t.Errorf("a run without the compacted measure reports %q", absent)
		}
	}
	res.Compacted = &compactedResult{Jobs: 1, Compacted: 1, OlderTransactions: 2, AccountRowsChanged: 7, Bookkeeping: bookkeepingResult{Accounts: 1000, AccountBytes: 8 << 20, BookkeepingBytes: 1 << 20}}
	if err := writeScale(res, dir); err != nil {
		t.Fatal(err)
	}
	raw, _ = os.ReadFile(filepath.Join(dir, "scale.md"))
	if !strings.Contains(string(raw), "(goal ≤ 0.5) (2 older transactions were still open: dead rows they may see are counted) | **0.12** |") ||
		!strings.Contains(string(raw), "creation only inserts into them (7 of their rows were updated or deleted in this run: those dead rows count).") ||
		strings.Contains(string(raw), "already compacted") {
		t.Errorf("a compacted measure with older transactions open:\n%s", raw)
	}
}
