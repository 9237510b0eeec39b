package main

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestPushBulk: push --bulk sends the file as one job, follows it and
// writes its failed lines as the report. A rerun whose state says the job
// was accepted follows that job; a rerun of an upload whose answer was lost
// (key saved, no id) gets the same job back: never a second job.
func TestPushBulk(t *testing.T) {
	e := newEnv(t)
	lines := validLines(t, "BULK", 40)
	lines = append(lines, strings.Replace(accountLine(t, "BULK-BAD1"), `"sales_channel":"PRICE_COMPARISON"`, `"sales_channel":"X"`, 1))
	lines = append(lines[:10], append([]string{`{"not": "an account"}`}, lines[10:]...)...)
	file := e.writeFile("accounts.ndjson", lines)
	report := e.dir + "/report.csv"
	out, err := e.push(file, report, "--bulk")
	if !errors.Is(err, errSomeFailed) {
		t.Fatalf("push --bulk: %v\n%s", err, out)
	}
	e.checkAllImported(40)
	rows := byAccount(readReport(t, report))
	if len(rows) != 2 || rows["BULK-BAD1"][0].Attr != "sales_channel" || rows["line 11"] == nil {
		t.Fatalf("report: %v", rows)
	}
	if _, err := os.Stat(report + ".job"); !os.IsNotExist(err) {
		t.Fatalf("state file left after a finished job: %v", err)
	}
	jobID := e.count(`SELECT id FROM import_jobs`)

	// The answer of the upload was lost: the state has the key, not the id.
	if err := saveState(report+".job", bulkState{File: file, IdempotencyKey: "k-lost"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.push(file, report, "--bulk"); !errors.Is(err, errSomeFailed) {
		t.Fatal(err)
	}
	if err := saveState(report+".job", bulkState{File: file, IdempotencyKey: "k-lost"}); err != nil {
		t.Fatal(err)
	}
	out, err = e.push(file, report, "--bulk")
	if !errors.Is(err, errSomeFailed) || !strings.Contains(out, "accepted") {
		t.Fatalf("rerun: %v %s", err, out)
	}
	if n := e.count(`SELECT count(*) FROM import_jobs`); n != 2 {
		t.Fatalf("%d jobs, want 2 (the first run's and one for key k-lost)", n)
	}
	// Accepted and then stopped: a rerun follows the job, uploads nothing.
	if err := saveState(report+".job", bulkState{File: file, IdempotencyKey: "k-other", JobID: jobID}); err != nil {
		t.Fatal(err)
	}
	out, err = e.push(file, report, "--bulk")
	if !errors.Is(err, errSomeFailed) || !strings.Contains(out, "resuming job") {
		t.Fatalf("resume: %v %s", err, out)
	}
	if n := e.count(`SELECT count(*) FROM import_jobs`); n != 2 {
		t.Fatalf("%d jobs after resuming, want 2", n)
	}
	e.checkAllImported(40)
}
