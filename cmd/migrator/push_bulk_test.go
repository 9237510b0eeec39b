package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gridshift/dataimport/pkg/testutil"
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

// bulkLines is the file of the split tests: valid accounts PREFIX-0000...
// with, at the given lines (1-based), lines without an account number,
// and one blank line, which the API counts as a line too.
func bulkLines(t *testing.T, prefix string, valid int, bad ...int) []string {
	lines := validLines(t, prefix, valid)
	for _, n := range bad {
		lines = append(lines[:n-1], append([]string{`{"not": "an account"}`}, lines[n-1:]...)...)
	}
	return append(lines[:5], append([]string{""}, lines[5:]...)...)
}

// TestPushBulkSplit: a file larger than the API's MAX_JOB_BYTES goes up as
// several jobs of at most --job-bytes, cut at line boundaries; every
// account is created once, and the report gives the lines of the whole
// file for invalid lines of different parts.
func TestPushBulkSplit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *testutil.StackConfig) { c.MaxJobBytes = 32 << 10 })
	lines := bulkLines(t, "SPLIT", 30, 3, 15, 29)
	// The blank line 6 moves the later ones: bad lines 3, 16 and 30.
	for _, n := range []int{3, 16, 30} {
		if lines[n-1] != `{"not": "an account"}` || lines[5] != "" {
			t.Fatalf("line %d: %.40s", n, lines[n-1])
		}
	}
	file := e.writeFile("accounts.ndjson", lines)
	if fi, _ := os.Stat(file); fi.Size() <= 32<<10 {
		t.Fatalf("file of %d bytes fits one job", fi.Size())
	}
	report := filepath.Join(e.dir, "report.csv")
	out, err := e.push(file, report, "--bulk", "--job-bytes", "20KiB")
	if !errors.Is(err, errSomeFailed) {
		t.Fatalf("push --bulk: %v\n%s", err, out)
	}
	e.checkAllImported(30)
	jobs := e.count(`SELECT count(*) FROM import_jobs`)
	if jobs < 3 || int64(e.proxy.calls("/jobs/", "")) != jobs {
		t.Fatalf("%d jobs for %d uploads, want 3 or more, one per upload", jobs, e.proxy.calls("/jobs/", ""))
	}
	if n := e.count(`SELECT count(*) FROM import_jobs WHERE state <> 'COMPLETED'`); n != 0 {
		t.Fatalf("%d jobs not COMPLETED", n)
	}
	rows := byAccount(readReport(t, report))
	if len(rows) != 3 || rows["line 3"] == nil || rows["line 16"] == nil || rows["line 30"] == nil {
		t.Fatalf("report: %v", rows)
	}
	if !strings.Contains(out, "COMPLETED: 33 lines, 30 created, 0 already imported, 0 staged, 3 invalid, 0 failed") {
		t.Fatalf("summary: %s", out)
	}
	if _, err := os.Stat(report + ".job"); !os.IsNotExist(err) {
		t.Fatalf("state file left after finished jobs: %v", err)
	}
}

// TestPushBulkSplitResume: the run stops after the first part was accepted
// and the second uploaded but its answer lost. The rerun follows the first
// job, sends the second part again under its key (the same job comes
// back) and uploads the rest: one job per part, never a second.
func TestPushBulkSplitResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	file := e.writeFile("accounts.ndjson", bulkLines(t, "RESUME", 24, 20))
	report := filepath.Join(e.dir, "report.csv")
	soft, stop := context.WithCancel(context.Background())
	defer stop()
	var uploads atomic.Int32 // the second upload is cut; the rerun's go through
	e.proxy.fake = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/jobs/") {
			return false
		}
		if uploads.Add(1) != 2 {
			return false
		}
		// The API receives the part; its answer never reaches the CLI.
		req, err := http.NewRequestWithContext(r.Context(), r.Method, e.st.Server.URL+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			t.Error(err)
			return false
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return false
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Errorf("second part: %d", resp.StatusCode)
		}
		stop() // Ctrl-C
		w.WriteHeader(http.StatusBadGateway)
		return true
	}
	out, err := e.run(soft, context.Background(), "push", file, "--team", "Migrations", "--report", report, "--bulk", "--job-bytes", "16KiB")
	if !errors.Is(err, errInterrupted) {
		t.Fatalf("first run: %v, want errInterrupted\n%s", err, out)
	}
	st, found, err := loadState(report + ".job")
	if err != nil || !found {
		t.Fatalf("state: %v %v", found, err)
	}
	if len(st.Parts) < 3 || st.Parts[0].JobID == 0 || st.Parts[1].JobID != 0 {
		t.Fatalf("state after the stop: %+v", st)
	}
	if n := e.count(`SELECT count(*) FROM import_jobs`); n != 2 {
		t.Fatalf("%d jobs after the stop, want 2", n)
	}

	if n := uploads.Load(); n != 2 {
		t.Fatalf("%d uploads before the stop, want 2", n)
	}
	out, err = e.push(file, report, "--bulk")
	if !errors.Is(err, errSomeFailed) || !strings.Contains(out, fmt.Sprintf("resuming job %d (part 1/%d)", st.Parts[0].JobID, len(st.Parts))) {
		t.Fatalf("rerun: %v\n%s", err, out)
	}
	if n := int(uploads.Load()) - 2; n != len(st.Parts)-1 {
		t.Fatalf("rerun uploaded %d parts, want %d (all but the accepted one)", n, len(st.Parts)-1)
	}
	if n := e.count(`SELECT count(*) FROM import_jobs`); n != int64(len(st.Parts)) {
		t.Fatalf("%d jobs for %d parts", n, len(st.Parts))
	}
	e.checkAllImported(24)
	rows := byAccount(readReport(t, report))
	if len(rows) != 1 || rows["line 21"] == nil {
		t.Fatalf("report: %v", rows)
	}
}

// TestSplitFile: parts end at line boundaries, a line longer than the part
// size is a part alone, blank lines belong to the part they fall in and a
// part of blank lines only is left out.
func TestSplitFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.ndjson")
	long := strings.Repeat("x", 25)
	// Lines: 1 "aaaa", 2 "bbbb", 3 long, 4 "cccc", 5-8 blank, 9 "dd" without newline.
	content := "aaaa\nbbbb\n" + long + "\ncccc\n\n\n\n\ndd"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	parts, size, err := splitFile(path, 10)
	if err != nil {
		t.Fatal(err)
	}
	if size != int64(len(content)) {
		t.Fatalf("size %d", size)
	}
	type span struct{ start, end, line int64 }
	want := []span{{0, 10, 1}, {10, 36, 3}, {36, 45, 4}, {45, 47, 9}}
	var got []span
	keys := map[string]bool{}
	for _, p := range parts {
		got = append(got, span{p.Start, p.End, p.FirstLine})
		keys[p.IdempotencyKey] = true
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || len(keys) != len(parts) {
		t.Fatalf("parts %v, want %v (keys %v)", got, want, keys)
	}
	for _, p := range parts {
		if p.Start > 0 && content[p.Start-1] != '\n' {
			t.Fatalf("part %+v does not start a line", p)
		}
	}

	// The blank lines after a full part make a part of their own: left out.
	if err := os.WriteFile(path, []byte("aaaaaaaaa\n\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if parts, _, err = splitFile(path, 10); err != nil || len(parts) != 1 || parts[0].End != 10 {
		t.Fatalf("parts %+v, %v", parts, err)
	}
}
