package postgres_test

import (
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
)

// RetryFailedCreations (the console's "retry the failed creations matching
// this filter") re-runs a supplier's failed creations of one cause, in jobs
// and outside them, for the organisation asked: accounts outside jobs get
// a scheduled attempt (PENDING, under the cap), job lines go back to their
// job, which is PROCESSING again under a new wake-up task, counters moved.
// Other causes, other organisations' jobs and accounts no longer failed
// are left alone, and the operator's action is audited.
func TestRetryFailedCreationsByFilter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.supplier("RETRY", false)
	notFound := func(attr string) *dataimport.Error {
		return &dataimport.Error{Code: dataimport.CodeAccountFailedValidation, Detail: "Account failed validation.",
			Errors: []dataimport.FieldError{{Code: "product_not_found", Attr: attr, Detail: "No product LATE."}}}
	}
	vendor := &dataimport.Error{Code: "payment_instruction_rejected_by_vendor", Detail: "declined", Domain: "vendor"}
	// Outside jobs: two accounts failed for the product, one for the vendor.
	var alone []int64
	for _, c := range []struct {
		ext string
		e   *dataimport.Error
	}{{"ALONE-1", notFound("a")}, {"ALONE-2", notFound("b")}, {"ALONE-3", vendor}} {
		in := e.prepare(s, c.ext, false, nil)
		e.must(e.db.FinishAttempt(e.ctx, in.ProcessID, in.Attempt, postgres.OutcomeFailed, c.e))
		alone = append(alone, in.ProcessID)
	}
	// Two organisations' COMPLETED jobs, each with one line failed for the
	// product (its account's current version) and one created.
	var jobs []int64
	for i, org := range []string{"Org A", "Org B"} {
		o, err := e.db.CreateOrganisation(e.ctx, org)
		e.must(err)
		ext := []string{"JOB-A", "JOB-B"}[i]
		pid := e.stage(s, ext, nil)
		var id int64
		e.must(e.g.Raw(`INSERT INTO import_jobs (organisation_id, supplier_id, state, n_received, n_failed, n_created, finished_at)
			VALUES (?, ?, 'COMPLETED', 2, 1, 1, now()) RETURNING id`, o.ID, s.ID).Scan(&id).Error)
		e.must(e.g.Exec(`INSERT INTO import_job_records (job_id, line, external_account_number, payload, outcome, errors, process_id, staged_version, attempt)
			VALUES (?, 1, ?, '{}', 'failed', ?::jsonb, ?, 1, 1), (?, 2, 'CREATED-'||?, '{}', 'created', NULL, NULL, 1, 1)`,
			id, ext, `{"code":"account_failed_validation","detail":"x","errors":[{"code":"product_not_found","attr":"a","detail":"x"}]}`, pid, id, ext).Error)
		e.must(e.g.Exec(`UPDATE import_processes SET attempt = 1, v2_status = 'ERRORED' WHERE id = ?`, pid).Error)
		jobs = append(jobs, id)
	}
	var orgA int64
	e.scalar(&orgA, `SELECT organisation_id FROM import_jobs WHERE id = ?`, jobs[0])

	// Another cause, or a refusal of data, retries nothing.
	for _, q := range []postgres.FailureQuery{{SupplierID: s.ID, Code: "no_such_code"}, {SupplierID: s.ID, Code: "product_not_found", Source: postgres.FailureStage}} {
		if n, err := e.db.RetryFailedCreations(e.ctx, q); err != nil || n != 0 {
			t.Fatalf("retry %+v: %d %v", q, n, err)
		}
	}
	ctx := postgres.WithActor(e.ctx, "operator:alice")
	r, err := e.db.RetryFailures(ctx, postgres.FailureQuery{SupplierID: s.ID, OrganisationID: orgA, Code: "product_not_found"})
	e.must(err)
	// Org A's job line, and both accounts outside jobs (their records are
	// every organisation's).
	if r.N != 3 {
		t.Fatalf("retried %d, want 3", r.N)
	}
	var sawJob, sawAccounts int
	for _, task := range r.Tasks {
		switch tk := task.(type) {
		case queue.BulkJob:
			if tk.JobID != jobs[0] || tk.Epoch != 1 {
				t.Errorf("job task %+v", tk)
			}
			sawJob++
		case queue.CreateAccount:
			if tk.Attempt != 2 || (tk.ProcessID != alone[0] && tk.ProcessID != alone[1]) {
				t.Errorf("account task %+v", tk)
			}
			sawAccounts++
		}
	}
	if sawJob != 1 || sawAccounts != 2 {
		t.Errorf("tasks %+v", r.Tasks)
	}
	for i, pid := range alone {
		var status, v2 string
		var attempt int
		e.must(e.g.Raw(`SELECT status, v2_status, attempt FROM import_processes WHERE id = ?`, pid).Row().Scan(&status, &v2, &attempt))
		want := [3]any{"IN_PROGRESS", "PENDING", 2}
		if i == 2 {
			want = [3]any{"UNKNOWN", "ERRORED", 1}
		}
		if got := [3]any{status, v2, attempt}; got != want {
			t.Errorf("ALONE-%d: %v, want %v", i+1, got, want)
		}
	}
	var events int64
	e.scalar(&events, `SELECT count(*) FROM import_process_events WHERE event = ? AND data->>'api' = 'retry'`, dataimport.EventScheduled)
	if events != 2 {
		t.Errorf("%d scheduled events of the retry, want 2", events)
	}
	for i, id := range jobs {
		var state, outcome string
		var failed, staged int64
		e.must(e.g.Raw(`SELECT j.state, j.n_failed, j.n_staged, r.outcome FROM import_jobs j JOIN import_job_records r ON r.job_id = j.id AND r.line = 1
			WHERE j.id = ?`, id).Row().Scan(&state, &failed, &staged, &outcome))
		want := [4]any{"PROCESSING", int64(0), int64(1), "staged"}
		if i == 1 {
			want = [4]any{"COMPLETED", int64(1), int64(0), "failed"}
		}
		if got := [4]any{state, failed, staged, outcome}; got != want {
			t.Errorf("job %d: %v, want %v", i, got, want)
		}
	}
	var audits int64
	e.scalar(&audits, `SELECT count(*) FROM audit_log WHERE actor = 'operator:alice' AND action = ? AND target = 'supplier:RETRY' AND after->>'retried' = '3'`,
		postgres.AuditFailuresRetry)
	if audits != 1 {
		t.Errorf("%d audit rows of the retry, want 1", audits)
	}
	// Nothing is retried twice: what was retried is on its way.
	if n, err := e.db.RetryFailedCreations(e.ctx, postgres.FailureQuery{SupplierID: s.ID, OrganisationID: orgA, Code: "product_not_found"}); err != nil || n != 0 {
		t.Errorf("second retry: %d %v", n, err)
	}
}

// Regression: FinishJobIfDone waiting for a retry's lock on the job row
// completed the job over the lines that retry had just put back (its
// UPDATE re-checked the job row after the wait, but not the lines: the
// subquery kept its old snapshot), leaving them staged in a COMPLETED job
// that no worker would ever look at again.
func TestFinishJobIfDoneSeesLinesARetryPutBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.supplier("RACE", false)
	o, err := e.db.CreateOrganisation(e.ctx, "Race Partner")
	e.must(err)
	var id int64
	e.must(e.g.Raw(`INSERT INTO import_jobs (organisation_id, supplier_id, state, n_received, n_failed) VALUES (?, ?, 'PROCESSING', 1, 1) RETURNING id`,
		o.ID, s.ID).Scan(&id).Error)
	e.must(e.g.Exec(`INSERT INTO import_job_records (job_id, line, external_account_number, payload, outcome, staged_version, attempt)
		VALUES (?, 1, 'X', '{}', 'failed', 1, 1)`, id).Error)
	// The retry's transaction, held open with the job locked and the line back.
	tx := e.g.Begin()
	e.must(tx.Exec(`SELECT 1 FROM import_jobs WHERE id = ? FOR NO KEY UPDATE`, id).Error)
	e.must(tx.Exec(`UPDATE import_job_records SET outcome = 'staged', attempt = NULL WHERE job_id = ?`, id).Error)
	e.must(tx.Exec(`UPDATE import_jobs SET n_failed = 0, n_staged = 1 WHERE id = ?`, id).Error)
	type result struct {
		done bool
		err  error
	}
	finished := make(chan result, 1)
	go func() {
		done, err := e.db.FinishJobIfDone(e.ctx, id)
		finished <- result{done, err}
	}()
	// Wait until it waits for the lock, then commit the retry.
	for range 200 {
		var waiting int64
		e.scalar(&waiting, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)
		if waiting > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.must(tx.Commit().Error)
	r := <-finished
	e.must(r.err)
	var state string
	e.scalar(&state, `SELECT state FROM import_jobs WHERE id = ?`, id)
	if r.done || state != "PROCESSING" {
		t.Fatalf("FinishJobIfDone after the retry committed: done %v, job %s; want the job PROCESSING with its line staged", r.done, state)
	}
}
