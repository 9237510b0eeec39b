package postgres_test

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// visibleEnv is a supplier granted to one organisation with one live
// (PROCESSING) job of lines lines VIS-1…VIS-lines, all pending, beside a
// finished job and another supplier's live job of the same externals.
type visibleEnv struct {
	*env
	org, stranger int64
	sup           dataimport.Supplier
	job           int64
}

func newVisibleEnv(tb testing.TB, lines int) visibleEnv {
	e := newEnv(tb)
	v := visibleEnv{env: e, sup: e.supplier("VISIBLE_ENERGY", false)}
	other := e.supplier("OTHER_ENERGY", false)
	org, err := e.db.CreateOrganisation(e.ctx, "Visible Partner")
	e.must(err)
	str, err := e.db.CreateOrganisation(e.ctx, "Stranger Partner")
	e.must(err)
	v.org, v.stranger = org.ID, str.ID
	e.must(e.g.Exec(`INSERT INTO organisation_suppliers (organisation_id, supplier_id) VALUES (?, ?), (?, ?)`, v.org, v.sup.ID, v.stranger, other.ID).Error)
	job := func(supplierID int64, state string, n int) int64 {
		var id int64
		e.scalar(&id, `INSERT INTO import_jobs (organisation_id, supplier_id, state, received_at, n_received, n_pending)
			VALUES (?, ?, ?, now(), ?, ?) RETURNING id`, v.org, supplierID, state, n, n)
		e.must(e.g.Exec(`INSERT INTO import_job_records (job_id, line, external_account_number, payload, outcome)
			SELECT ?, i, 'VIS-' || i, '{}', 'pending' FROM generate_series(1, ?) i`, id, n).Error)
		return id
	}
	v.job = job(v.sup.ID, "PROCESSING", lines)
	job(v.sup.ID, "COMPLETED", 1000)
	job(v.sup.ID, "RECEIVING", 1000) // has not answered 202 yet
	job(other.ID, "PROCESSING", 1000)
	e.must(e.g.Exec(`ANALYZE import_jobs; ANALYZE import_job_records`).Error)
	return v
}

func (v visibleEnv) lookup(org int64, external string) postgres.AcceptedLineLookup {
	v.tb.Helper()
	l, err := v.db.AcceptedJobLine(v.ctx, org, "VISIBLE_ENERGY", external)
	v.must(err)
	return l
}

// TestAcceptedJobLine: a pending line of a live job is found for a granted
// organisation; an invalid or cancelled line, a line of a job not yet
// accepted or finished, an unknown external and an organisation not granted
// the supplier find nothing; a line already staged says so (the caller
// re-reads the process). The probe is an index scan of the job's lines.
func TestAcceptedJobLine(t *testing.T) {
	v := newVisibleEnv(t, 20_000)
	if plan := v.explainAcceptedLine("VIS-17"); !strings.Contains(plan, "import_job_records_external_idx") {
		t.Fatalf("the probe does not use the (job_id, external) index:\n%s", plan)
	}
	if l := v.lookup(v.org, "VIS-17"); !l.Found || l.Staged || l.Line.JobID != v.job || l.Line.ReceivedAt.IsZero() {
		t.Fatalf("pending line: %+v", l)
	}
	if l := v.lookup(v.stranger, "VIS-17"); l.Found || l.Staged {
		t.Fatalf("organisation not granted the supplier: %+v", l)
	}
	if l := v.lookup(v.org, "VIS-999999"); l.Found || l.Staged {
		t.Fatalf("unknown external: %+v", l)
	}
	v.must(v.g.Exec(`UPDATE import_job_records SET outcome = 'invalid' WHERE job_id = ? AND line = 18`, v.job).Error)
	v.must(v.g.Exec(`UPDATE import_job_records SET outcome = 'cancelled' WHERE job_id = ? AND line = 19`, v.job).Error)
	v.must(v.g.Exec(`UPDATE import_job_records SET outcome = 'staged', staged_version = 1 WHERE job_id = ? AND line = 20`, v.job).Error)
	for ext, want := range map[string]postgres.AcceptedLineLookup{"VIS-18": {}, "VIS-19": {}, "VIS-20": {Staged: true}} {
		if l := v.lookup(v.org, ext); l.Found != want.Found || l.Staged != want.Staged {
			t.Errorf("%s: %+v, want found=%v staged=%v", ext, l, want.Found, want.Staged)
		}
	}
	// Lines 1001+ exist only in the 20,000-line job; 500 is also in the
	// RECEIVING and COMPLETED jobs, which must not make it found twice or
	// from the wrong job.
	if l := v.lookup(v.org, "VIS-500"); !l.Found || l.Line.JobID != v.job {
		t.Fatalf("line in several jobs: %+v", l)
	}
	v.must(v.g.Exec(`UPDATE import_jobs SET state = 'COMPLETED' WHERE id = ?`, v.job).Error)
	if l := v.lookup(v.org, "VIS-17"); l.Found || l.Staged {
		t.Fatalf("line of a finished job: %+v", l)
	}
	// An unstaged line of a finished job is no longer one: the miss path
	// still ends in ErrProcessNotFound for the handler's 404.
	if _, err := v.db.ProcessForOrganisation(v.ctx, v.org, "VISIBLE_ENERGY", "VIS-17"); !errors.Is(err, postgres.ErrProcessNotFound) {
		t.Fatalf("process of an unstaged line: %v", err)
	}
}

// explainAcceptedLine is the plan of the probe, to check it stays an index
// probe of the job's lines, never a scan of them.
func (v visibleEnv) explainAcceptedLine(external string) string {
	v.tb.Helper()
	var plan []string
	v.must(v.g.Raw(`EXPLAIN SELECT j.id FROM import_suppliers s
		  JOIN organisation_suppliers g ON g.supplier_id = s.id AND g.organisation_id = ?
		  JOIN import_jobs j ON j.supplier_id = s.id AND j.state = 'PROCESSING'
		  JOIN import_job_records r ON r.job_id = j.id AND r.external_account_number = ?
		 WHERE s.code = 'VISIBLE_ENERGY' AND r.outcome NOT IN ('invalid', 'cancelled')`, v.org, external).Scan(&plan).Error)
	return strings.Join(plan, "\n")
}

// BenchmarkAcceptedJobLineMiss times the status miss path of #33 against a
// live job of 200,000 lines: ProcessForOrganisation finds nothing, then
// AcceptedJobLine probes the live jobs. Goal: well under the status p99 of
// 10 ms.
func BenchmarkAcceptedJobLineMiss(b *testing.B) {
	v := newVisibleEnv(b, 200_000)
	plan := v.explainAcceptedLine("VIS-123456")
	b.Logf("plan:\n%s", plan)
	if !strings.Contains(plan, "import_job_records_external_idx") || strings.Contains(plan, "Seq Scan on import_job_records") {
		b.Fatalf("the probe does not use the (job_id, external) index:\n%s", plan)
	}
	var took []time.Duration
	i := 0
	for b.Loop() {
		i++
		ext := "VIS-" + strconv.Itoa(1+(i*7919)%200_000)
		t0 := time.Now()
		if _, err := v.db.ProcessForOrganisation(v.ctx, v.org, "VISIBLE_ENERGY", ext); !errors.Is(err, postgres.ErrProcessNotFound) {
			b.Fatalf("process of %s: %v", ext, err)
		}
		l, err := v.db.AcceptedJobLine(v.ctx, v.org, "VISIBLE_ENERGY", ext)
		v.must(err)
		took = append(took, time.Since(t0))
		if !l.Found {
			b.Fatalf("%s not found", ext)
		}
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
}
