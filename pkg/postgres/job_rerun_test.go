package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// rerunJob is a received (PROCESSING) job of lines R-1..R-n, with the
// outcomes given by line set afterwards as the worker would leave them.
func (e *env) rerunJob(sup dataimport.Supplier, org string, outcomes []string) dataimport.Job {
	job := e.receivingJob(sup, org)
	_, err := e.db.ReceiveJob(e.ctx, job.ID, 0, func() int64 { return 1 }, func() []byte { return make([]byte, 32) },
		func(emit func(postgres.JobLine) error) error {
			for i, o := range outcomes {
				l := postgres.JobLine{Line: i + 1, External: fmt.Sprintf("R-%d", i+1), Payload: []byte(`{}`)}
				if o == dataimport.OutcomeInvalid {
					l.Err = &dataimport.Error{Code: "account_failed_validation", Detail: "bad", Errors: []dataimport.FieldError{{Attr: "email", Code: "invalid_email"}}}
				}
				if err := emit(l); err != nil {
					return err
				}
			}
			return nil
		})
	e.must(err)
	// The worker's outcomes, and counters that match them.
	for i, o := range outcomes {
		if o != dataimport.OutcomeInvalid {
			e.must(e.g.Exec(`UPDATE import_job_records SET outcome = ?, errors = CASE WHEN ? = 'failed' THEN '{"code":"x","detail":"failed once"}'::jsonb END
				WHERE job_id = ? AND line = ?`, o, o, job.ID, i+1).Error)
		}
	}
	e.must(e.g.Exec(`UPDATE import_jobs j SET n_pending = c.pending, n_invalid = c.invalid, n_failed = c.failed, n_created = c.created, n_staged = c.staged,
		n_cancelled = c.cancelled, n_already_imported = c.imported, n_duplicate_line = c.dup
		FROM (SELECT count(*) FILTER (WHERE outcome = 'pending') AS pending, count(*) FILTER (WHERE outcome = 'invalid') AS invalid,
		             count(*) FILTER (WHERE outcome = 'failed') AS failed, count(*) FILTER (WHERE outcome = 'created') AS created,
		             count(*) FILTER (WHERE outcome = 'staged') AS staged, count(*) FILTER (WHERE outcome = 'cancelled') AS cancelled,
		             count(*) FILTER (WHERE outcome = 'already_imported') AS imported,
		             count(*) FILTER (WHERE outcome = 'duplicate_line') AS dup
		        FROM import_job_records WHERE job_id = ?) c WHERE j.id = ?`, job.ID, job.ID).Error)
	return job
}

func (e *env) rerun(job dataimport.Job, lines ...string) postgres.JobRerun {
	id := fmt.Sprintf("00000000-0000-0000-0000-%012d", time.Now().UnixNano()%1e12)
	e.must(e.db.ReceiveJobCorrections(e.ctx, job.ID, id, func(emit func(postgres.JobCorrection) error) error {
		for i, ext := range lines {
			if err := emit(postgres.JobCorrection{Line: i + 1, External: ext, Payload: []byte(`{"corrected":true}`)}); err != nil {
				return err
			}
		}
		return nil
	}))
	r, err := e.db.ApplyJobCorrections(e.ctx, job.OrganisationID, job.ID, id, 100)
	e.must(err)
	return r
}

// TestJobRerunAnswersAsTheDomainRule: every kind of corrected line gets the
// answer dataimport.RerunAnswer gives it (the store applies the rule in
// SQL); only invalid and failed lines move, to pending, with their earlier
// outcome as history, and the counters move with them, adding up.
func TestJobRerunAnswersAsTheDomainRule(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sup := e.supplier("RERUN", false)
	outcomes := []string{"invalid", "failed", "created", "staged", "pending", "cancelled", "already_imported", "duplicate_line", "invalid"}
	job := e.rerunJob(sup, "Rerun Partner", outcomes)
	// R-9's account was created another way meanwhile.
	e.create(e.prepare(sup, "R-9", false, nil))

	body := []string{"R-1", "R-2", "R-3", "R-4", "R-5", "R-6", "R-7", "R-8", "R-9", "NOPE", "R-1"}
	r := e.rerun(job, body...)
	refused := map[int64]postgres.RerunRefusal{}
	for _, f := range r.Refused {
		refused[f.Line] = f
	}
	accepted := 0
	for i, ext := range body {
		found := ext != "NOPE"
		outcome := ""
		if found {
			var n int
			_, _ = fmt.Sscanf(ext, "R-%d", &n)
			outcome = outcomes[n-1]
		}
		later := i == 0 // line 11 corrects R-1 again
		want := dataimport.RerunAnswer(found, outcome, ext == "R-9", later)
		got := dataimport.RerunAccepted
		if f, ok := refused[int64(i+1)]; ok {
			got = f.Answer
		}
		if got != want {
			t.Errorf("line %d (%s, job line %q): %s, the rule says %s", i+1, ext, outcome, got, want)
		}
		if got == dataimport.RerunAccepted {
			accepted++
		}
	}
	if accepted != 2 || r.Counts[dataimport.RerunAccepted] != 2 || r.Reopened {
		t.Fatalf("accepted %d, counts %v, reopened %v", accepted, r.Counts, r.Reopened)
	}
	c := r.Job.Counters
	if c.Invalid != 1 || c.Failed != 0 || c.Pending != 3 || c.Sum() != c.Received || c.Received != int64(len(outcomes)) {
		t.Fatalf("counters after the re-run: %+v", c)
	}
	hist := map[int][]dataimport.JobLineHistory{}
	e.must(e.db.EachJobRecord(e.ctx, job.ID, nil, func(rec dataimport.JobRecord) error {
		hist[rec.Line] = rec.History
		return nil
	}))
	if h := hist[1]; len(h) != 1 || h[0].Outcome != "invalid" || len(h[0].Errors) != 1 || h[0].Errors[0].Code != "invalid_email" || h[0].At.IsZero() {
		t.Errorf("line 1's history: %+v", h)
	}
	if h := hist[2]; len(h) != 1 || h[0].Outcome != "failed" || h[0].Code != "x" || h[0].Detail != "failed once" {
		t.Errorf("line 2's history: %+v", h)
	}
	for _, l := range []int{3, 4, 9} {
		if len(hist[l]) != 0 {
			t.Errorf("line %d has history: %+v", l, hist[l])
		}
	}
	var payload string
	e.scalar(&payload, `SELECT payload FROM import_job_records WHERE job_id = ? AND line = 1`, job.ID)
	if payload != `{"corrected":true}` {
		t.Errorf("line 1's payload %s", payload)
	}
	var left int
	e.scalar(&left, `SELECT count(*) FROM import_job_corrections`)
	if left != 0 {
		t.Errorf("%d corrections left behind", left)
	}

	// A completed job reopens (its next lease epoch names its task); a
	// cancelled one refuses.
	e.must(e.g.Exec(`UPDATE import_job_records SET outcome = 'failed' WHERE job_id = ? AND line IN (1, 2, 5)`, job.ID).Error)
	e.must(e.g.Exec(`UPDATE import_jobs SET state = 'COMPLETED', n_pending = 0, n_failed = 3 WHERE id = ?`, job.ID).Error)
	r = e.rerun(job, "R-1")
	if !r.Reopened || r.Epoch != 1 || r.Job.State != dataimport.JobProcessing || r.Job.Counters.Sum() != r.Job.Counters.Received {
		t.Fatalf("reopened: %+v", r)
	}
	var n int
	e.scalar(&n, `SELECT jsonb_array_length(history) FROM import_job_records WHERE job_id = ? AND line = 1`, job.ID)
	if n != 2 {
		t.Errorf("line 1 has %d earlier outcomes, want 2", n)
	}
	e.must(e.g.Exec(`UPDATE import_jobs SET state = 'CANCELLED' WHERE id = ?`, job.ID).Error)
	_, err := e.db.ApplyJobCorrections(e.ctx, job.OrganisationID, job.ID, "00000000-0000-0000-0000-000000000009", 10)
	if de, ok := dataimport.AsError(err); !ok || de.Code != dataimport.CodeJobNotRerunnable {
		t.Fatalf("a cancelled job: %v", err)
	}
	if _, err := e.db.ApplyJobCorrections(e.ctx, job.OrganisationID+1000, job.ID, "00000000-0000-0000-0000-000000000009", 10); err != postgres.ErrJobNotFound {
		t.Fatalf("another organisation's job: %v", err)
	}
}

// TestFinishJobIfDoneWaitsForARerun is the regression test of a job
// completed over lines a re-run had just reopened: FinishJobIfDone, waiting
// for the re-run's lock on the job, judged the lines by the snapshot it took
// before the wait.
func TestFinishJobIfDoneWaitsForARerun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sup := e.supplier("RERUN_RACE", false)
	job := e.rerunJob(sup, "Rerun Race", []string{"invalid", "created"})
	// The re-run's transaction, held open: the job row first, then the line.
	tx := e.g.Begin()
	e.must(tx.Exec(`SELECT 1 FROM import_jobs WHERE id = ? FOR NO KEY UPDATE`, job.ID).Error)
	e.must(tx.Exec(`UPDATE import_job_records SET outcome = 'pending' WHERE job_id = ? AND line = 1`, job.ID).Error)
	e.must(tx.Exec(`UPDATE import_jobs SET n_invalid = 0, n_pending = 1 WHERE id = ?`, job.ID).Error)
	type result struct {
		done bool
		err  error
	}
	got := make(chan result, 1)
	go func() {
		done, err := e.db.FinishJobIfDone(e.ctx, job.ID)
		got <- result{done, err}
	}()
	// Until the re-run commits, the finish waits on the job row.
	e.waitForLockOnJobs("FinishJobIfDone never waited for the re-run's lock")
	e.must(tx.Commit().Error)
	r := <-got
	e.must(r.err)
	var state string
	e.scalar(&state, `SELECT state FROM import_jobs WHERE id = ?`, job.ID)
	if r.done || state != "PROCESSING" {
		t.Fatalf("the job was completed over a reopened line: done %v, state %s", r.done, state)
	}
}

// waitForLockOnJobs returns once a statement of this database waits for a
// lock on import_jobs (the test holds it), failing with msg after 10 s.
func (e *env) waitForLockOnJobs(msg string) {
	e.tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		e.scalar(&waiting, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%import_jobs%' AND datname = current_database()`)
		if waiting > 0 {
			return
		}
		if time.Now().After(deadline) {
			e.tb.Fatal(msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFinishedJobViewIsFinal: the last rate sample is taken as the job
// completes, and none after: two reads of a finished job answer the same
// (a sample taken after COMPLETED changed accounts_per_second between them).
func TestFinishedJobViewIsFinal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sup := e.supplier("FINAL_VIEW", false)
	job := e.rerunJob(sup, "Final View", []string{"created", "created"})
	e.must(e.g.Exec(`UPDATE import_jobs SET state = 'PROCESSING', finished_at = NULL, rate_samples = '[]' WHERE id = ?`, job.ID).Error)
	e.must(e.db.SampleJobRate(e.ctx, job.ID))
	done, err := e.db.FinishJobIfDone(e.ctx, job.ID)
	e.must(err)
	if !done {
		t.Fatal("a job with every line created was not finished")
	}
	var n int
	var samples string
	e.scalar(&n, `SELECT jsonb_array_length(rate_samples) FROM import_jobs WHERE id = ?`, job.ID)
	if n != 2 {
		t.Fatalf("%d rate samples after finishing, want the running one and the final one", n)
	}
	e.scalar(&samples, `SELECT rate_samples::text FROM import_jobs WHERE id = ?`, job.ID)
	e.must(e.db.SampleJobRate(e.ctx, job.ID))
	var after string
	e.scalar(&after, `SELECT rate_samples::text FROM import_jobs WHERE id = ?`, job.ID)
	if after != samples {
		t.Errorf("a finished job sampled again:\nbefore %s\nafter  %s", samples, after)
	}
}
