package app_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/gridshift/dataimport/jobs"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// Compaction of a completed job (pkg/postgres/job_compact.go): what it
// keeps per account falls to at most half a KB per KB of the account rows
// it landed, and every answer about the job and its accounts is the same
// byte for byte. A re-run reopening the job stops it; the job is compacted
// again once it completes again.

// compactionAnswers are the answers compaction must leave unchanged.
func (p *pipeline) compactionAnswers(id int64, externals []string) map[string][]byte {
	p.TB.Helper()
	// Every answer is a 200 but an invalid line's status: its account was
	// never staged (404).
	get := func(path string) []byte {
		r := p.As(p.token, http.MethodGet, path, nil)
		if want := http.StatusOK; r.Status != want && !(strings.Contains(path, "/CMP-00150/") && r.Status == http.StatusNotFound) {
			p.TB.Fatalf("%s: %d %s", path, r.Status, r.Body)
		}
		return append([]byte(fmt.Sprintf("%d ", r.Status)), r.Body...)
	}
	job := fmt.Sprintf("%s%d/", jobsURL, id)
	out := map[string][]byte{
		"job":                      get(job),
		"results ndjson":           get(job + "results/?format=ndjson"),
		"results csv":              get(job + "results/?format=csv"),
		"failed results":           get(job + "results/?outcome=failed&format=ndjson"),
		"failures of the job":      get(fmt.Sprintf("%s?import_supplier=DEMO_ENERGY&job=%d", failuresURL, id)),
		"failure summary":          get(fmt.Sprintf("%ssummary/?import_supplier=DEMO_ENERGY&job=%d", failuresURL, id)),
		"reconciliation of job":    get(fmt.Sprintf("/v1/data-import/reconciliation/?import_supplier=DEMO_ENERGY&job=%d", id)),
		"reconciliation, supplier": get("/v1/data-import/reconciliation/?import_supplier=DEMO_ENERGY"),
	}
	for _, ext := range externals {
		out["v1 status "+ext] = get("/v1/data-import/account-transfer-status/DEMO_ENERGY/" + ext + "/")
		out["v2 status "+ext] = get(v2Accounts + "DEMO_ENERGY/" + ext + "/")
	}
	return out
}

func TestCompactedJobKeepsItsAnswersInHalfAKBPerKB(t *testing.T) {
	t.Parallel() // its own stack and database sizes; runs beside TestWorkerSIGKILLMidBatch's wait
	p := newPipeline(t)
	p.loadDemoCatalogue()
	w := p.StartWorker()
	for i := range 5 {
		p.ImportAccount(p.token, "DEMO_ENERGY", fmt.Sprintf("CMP-%05d", i), "Migrations")
	}
	base := p.tableBytes()

	// Lines of the benchmark's account with balances of their own; 1 in 100
	// invalid, 1 in 200 naming a tariff nobody has (its creation fails),
	// the first 5 already imported, 5 repeating an earlier line.
	// Fewer lines would measure the tables' page overhead more than the job.
	n := 2000
	if testing.Short() {
		n = 1000
	}
	const good, tariff = `"product_code":"DEMO-VAR-24-02"`, `"tariff_code":"NO-SUCH-TARIFF"`
	var body strings.Builder
	var invalid []string
	for i := range n {
		ext := fmt.Sprintf("CMP-%05d", i)
		line := p.balanceLine(ext, decimal.New(int64(i*37-5000), -2).StringFixed(2))
		switch {
		case i%100 == 50:
			line = p.invalidJobLine(ext)
			invalid = append(invalid, ext)
		case i%200 == 120:
			line = strings.Replace(line, good, tariff, 1)
		case i >= n-5:
			line = p.jobAccountLine(fmt.Sprintf("CMP-%05d", i-n/2))
		}
		body.WriteString(line + "\n")
	}
	id := acceptedJob(t, p.postJob(p.token, jobQuery, strings.NewReader(body.String()), true))
	on := true
	if _, err := p.DB.UpdateSupplierSettings(t.Context(), "DEMO_ENERGY", postgres.SupplierSettings{RequireProducts: &on}); err != nil {
		t.Fatal(err)
	}
	v := p.waitJob(p.token, id, 5*time.Minute)
	wantInvalid, wantFailed := int64(n/100), int64(n/200)
	checkCounters(t, v, map[string]int64{"received": int64(n), "invalid": wantInvalid, "failed": wantFailed, "already_imported": 5,
		"duplicate_line": 5, "created": int64(n) - wantInvalid - wantFailed - 10})
	// One account tampered with after it landed: reconciliation names it,
	// before compaction and after.
	if err := p.DB.Gorm().Exec(`UPDATE account_transactions SET amount = amount + 0.01
		WHERE transaction_id = 'TX-EXT-0001-002' AND account_id = (SELECT id FROM accounts WHERE external_account_number = 'CMP-00042')`).Error; err != nil {
		t.Fatal(err)
	}
	// Already imported, tampered with, failed, invalid, repeated.
	externals := []string{"CMP-00000", "CMP-00042", "CMP-00120", "CMP-00150", fmt.Sprintf("CMP-%05d", n/2-3)}
	before := p.compactionAnswers(id, externals)
	for name, want := range map[string]string{"failures of the job": `"CMP-00150"`, "failure summary": `"tariff_code_not_found"`,
		"failed results": `"CMP-00120"`, "v1 status CMP-00000": `"COMPLETED"`} {
		if !bytes.Contains(before[name], []byte(want)) {
			t.Fatalf("%s lacks %s: %s", name, want, before[name])
		}
	}
	if !bytes.Contains(before["reconciliation of job"], []byte(`"CMP-00042"`)) {
		t.Fatalf("reconciliation does not name the tampered account: %s", before["reconciliation of job"])
	}
	whole := grownSince(base, p.tableBytes())

	compactor := &jobs.JobCompactor{Store: p.DB, Log: slog.New(slog.DiscardHandler), Batch: 150}
	if done, err := compactor.Once(t.Context()); err != nil || done != 1 {
		t.Fatalf("compaction: %d jobs, %v", done, err)
	}
	// Measured again if over: a transaction elsewhere on the server may
	// have kept the deleted rows from VACUUM FULL (tableBytes).
	compact := grownSince(base, p.tableBytes())
	for try := 0; compact.PerKB() > 0.5 && try < 2; try++ {
		compact = grownSince(base, p.tableBytes())
	}
	accounts := v.Counters["created"]
	t.Logf("before compaction:\n%s", whole.String(accounts))
	t.Logf("after compaction:\n%s", compact.String(accounts))
	if compact.PerKB() > 0.5 {
		t.Errorf("bookkeeping %.2f KB per KB of account rows after compaction, want at most 0.5", compact.PerKB())
	}
	for name, b := range p.compactionAnswers(id, externals) {
		if !bytes.Equal(b, before[name]) {
			t.Errorf("%s changed by compaction:\nbefore %s\nafter  %s", name, before[name], b)
		}
	}
	// Invalid and failed lines keep their text; the failed accounts their
	// staged versions (a retry creates from them).
	if got := p.count(`SELECT count(*) FROM import_job_records WHERE job_id = ? AND payload IS NOT NULL`, id); got != wantInvalid+wantFailed {
		t.Errorf("%d lines keep their text, want the %d invalid and failed", got, wantInvalid+wantFailed)
	}
	if got := p.count(`SELECT count(*) FROM import_process_versions v JOIN import_processes p ON p.id = v.process_id
		WHERE p.platform_account_number IS NULL`); got != wantFailed {
		t.Errorf("%d staged versions of accounts not created, want %d", got, wantFailed)
	}
	// The console's account page says why a created account lists none.
	for ext, dropped := range map[string]bool{"CMP-00042": true, "CMP-00120": false} {
		tl, err := p.DB.FindTimeline(t.Context(), "DEMO_ENERGY", ext)
		if err != nil || tl.VersionsDropped != dropped || (len(tl.Versions) == 0) != dropped {
			t.Errorf("%s's timeline: %d versions, dropped %v (%v)", ext, len(tl.Versions), tl.VersionsDropped, err)
		}
	}
	op, err := p.DB.OperatorJob(t.Context(), id)
	if err != nil || op.CompactedAt == nil {
		t.Fatalf("operator's view of the compacted job: %v, %v", op.CompactedAt, err)
	}
	// A second pass finds nothing to do.
	if done, err := compactor.Once(t.Context()); err != nil || done != 0 {
		t.Fatalf("second pass: %d jobs, %v", done, err)
	}

	// A re-run of the invalid lines reopens the job: no batch compacts it
	// while it is not COMPLETED, and it is compacted again once it is.
	w.Shutdown()
	var fixed strings.Builder
	for _, ext := range invalid {
		fixed.WriteString(p.jobAccountLine(ext) + "\n")
	}
	if a, raw, _, status := p.postJobLines(id, fixed.String(), false); status != http.StatusAccepted {
		t.Fatalf("re-run: %d %s %+v", status, raw, a)
	}
	if r, err := p.DB.CompactJobBatch(t.Context(), id, 0, 1000); err != nil || !r.Stopped || r.Lines != 0 {
		t.Fatalf("a batch on the reopened job: %+v, %v", r, err)
	}
	if op, err := p.DB.OperatorJob(t.Context(), id); err != nil || op.CompactedAt != nil {
		t.Fatalf("a reopened job shows compacted at %v (%v)", op.CompactedAt, err)
	}
	p.StartWorker()
	v = p.waitJob(p.token, id, 2*time.Minute)
	checkCounters(t, v, map[string]int64{"received": int64(n), "failed": wantFailed, "already_imported": 5,
		"duplicate_line": 5, "created": int64(n) - wantFailed - 10})
	rerun := p.compactionAnswers(id, externals)
	if done, err := compactor.Once(t.Context()); err != nil || done != 1 {
		t.Fatalf("compaction after the re-run: %d jobs, %v", done, err)
	}
	for name, b := range p.compactionAnswers(id, externals) {
		if !bytes.Equal(b, rerun[name]) {
			t.Errorf("%s changed by the second compaction:\nbefore %s\nafter  %s", name, rerun[name], b)
		}
	}
	if got := p.count(`SELECT count(*) FROM import_job_records WHERE job_id = ? AND payload IS NOT NULL`, id); got != wantFailed {
		t.Errorf("%d lines keep their text after the re-run's compaction, want the %d failed", got, wantFailed)
	}
	// The drill-down of an invalid line's failure, now created: its text
	// was dropped, and the operator is told why; a failed line's is kept.
	sup, err := p.DB.SupplierByCode(t.Context(), "DEMO_ENERGY")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = p.DB.EachFailure(t.Context(), postgres.FailureQuery{SupplierID: sup.ID, JobID: id, Limit: 1000}, func(f postgres.Failure) error {
		fp, err := p.DB.PayloadOfFailure(t.Context(), sup.ID, f)
		if err != nil {
			return err
		}
		switch f.ExternalAccountNumber {
		case "CMP-00150":
			seen[f.ExternalAccountNumber] = true
			if fp.Payload != nil || !strings.Contains(fp.Missing, "compacted") {
				t.Errorf("drill-down of a re-run, created line: %+v", fp)
			}
		case "CMP-00120":
			seen[f.ExternalAccountNumber] = true
			if fp.Payload == nil {
				t.Errorf("drill-down of a failed line: %+v", fp)
			}
		}
		return nil
	})
	if err != nil || len(seen) != 2 {
		t.Fatalf("failures of the job: %v, seen %v", err, seen)
	}
}

// TestWorkerCompactsCompletedJobs: the worker compacts a job by itself once
// it has been COMPLETED for JOB_COMPACT_AFTER, and the operator's view says
// when.
func TestWorkerCompactsCompletedJobs(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker(func(c *testutil.StackConfig) {
		c.JobCompactEvery, c.JobCompactAfter = 100*time.Millisecond, 3*time.Second
	})
	var body strings.Builder
	for i := range 20 {
		body.WriteString(p.jobAccountLine(fmt.Sprintf("WCP-%02d", i)) + "\n")
	}
	id := acceptedJob(t, p.postJob(p.token, jobQuery, strings.NewReader(body.String()), false))
	if v := p.waitJob(p.token, id, time.Minute); v.Counters["created"] != 20 {
		t.Fatalf("job: %+v", v)
	}
	// Whole until JOB_COMPACT_AFTER has passed.
	if op, err := p.DB.OperatorJob(t.Context(), id); err != nil || op.CompactedAt != nil {
		t.Fatalf("compacted at %v at once (%v)", op.CompactedAt, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		op, err := p.DB.OperatorJob(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if op.CompactedAt != nil {
			if op.CompactedAt.Before(*op.FinishedAt) || op.CompactedAt.Sub(*op.FinishedAt) < 3*time.Second {
				t.Errorf("compacted at %v, finished at %v", op.CompactedAt, op.FinishedAt)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker did not compact the completed job")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := p.count(`SELECT count(*) FROM import_job_records WHERE job_id = ? AND payload IS NOT NULL`, id); n != 0 {
		t.Errorf("%d lines keep their text", n)
	}
	if n := p.count(`SELECT count(*) FROM import_processes WHERE staged_figures IS NOT NULL`); n != 20 {
		t.Errorf("%d accounts keep their staged figures, want 20", n)
	}
}
