package postgres_test

import (
	"testing"
)

// TestCompactJobWaitsForARerun: a compaction batch takes the job row as a
// re-run does, so one that comes while a re-run reopens the job waits for
// it, then sees the job PROCESSING and leaves every line as it is. Once the
// job is COMPLETED again, batches drop the created line's text (never the
// invalid line's) and the last one marks the job compacted.
func TestCompactJobWaitsForARerun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	sup := e.supplier("COMPACT_RACE", false)
	job := e.rerunJob(sup, "Compact Race", []string{"invalid", "created", "created"})
	e.must(e.g.Exec(`UPDATE import_jobs SET state = 'COMPLETED', finished_at = now() WHERE id = ?`, job.ID).Error)
	// The re-run's transaction, held open: the job row first, then the line.
	tx := e.g.Begin()
	e.must(tx.Exec(`SELECT 1 FROM import_jobs WHERE id = ? FOR NO KEY UPDATE`, job.ID).Error)
	e.must(tx.Exec(`UPDATE import_job_records SET outcome = 'pending' WHERE job_id = ? AND line = 1`, job.ID).Error)
	e.must(tx.Exec(`UPDATE import_jobs SET state = 'PROCESSING', finished_at = NULL, n_invalid = 0, n_pending = 1 WHERE id = ?`, job.ID).Error)
	type result struct {
		stopped bool
		lines   int64
		err     error
	}
	got := make(chan result, 1)
	go func() {
		r, err := e.db.CompactJobBatch(e.ctx, job.ID, 0, 10)
		got <- result{r.Stopped, r.Lines, err}
	}()
	e.waitForLockOnJobs("the compaction batch never waited for the re-run's lock")
	e.must(tx.Commit().Error)
	r := <-got
	e.must(r.err)
	var kept int
	e.scalar(&kept, `SELECT count(*) FROM import_job_records WHERE job_id = ? AND payload IS NOT NULL`, job.ID)
	if !r.stopped || r.lines != 0 || kept != 3 {
		t.Fatalf("a batch on a reopened job: stopped %v, %d lines dropped, %d kept", r.stopped, r.lines, kept)
	}

	// Completed again (the re-run's line failed this time).
	e.must(e.g.Exec(`UPDATE import_job_records SET outcome = 'failed' WHERE job_id = ? AND line = 1`, job.ID).Error)
	e.must(e.g.Exec(`UPDATE import_jobs SET state = 'COMPLETED', finished_at = now(), n_pending = 0, n_failed = 1 WHERE id = ?`, job.ID).Error)
	after, batches := int64(0), 0
	for ; batches < 10; batches++ {
		r, err := e.db.CompactJobBatch(e.ctx, job.ID, after, 2)
		e.must(err)
		if r.Stopped {
			t.Fatal("a batch on a completed job stopped")
		}
		if r.Done {
			break
		}
		after = r.Next
	}
	var compacted bool
	e.scalar(&kept, `SELECT count(*) FROM import_job_records WHERE job_id = ? AND payload IS NOT NULL`, job.ID)
	e.scalar(&compacted, `SELECT compacted_at >= finished_at FROM import_jobs WHERE id = ?`, job.ID)
	// 3 lines in batches of 2: two batches, and the one that finds none.
	if batches != 2 || kept != 1 || !compacted {
		t.Fatalf("after %d batches: %d lines keep their text (want the failed one), compacted %v", batches+1, kept, compacted)
	}
	ids, err := e.db.JobsToCompact(e.ctx, 0, 10)
	e.must(err)
	if len(ids) != 0 {
		t.Fatalf("a compacted job is still to compact: %v", ids)
	}
}
