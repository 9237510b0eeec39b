package postgres_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// A statement that moves a job's lines and then its counters takes the job
// row before any line, as a cancel does. Settling lines locked them first
// and then waited for the job row, while a cancel held the job row and
// waited for those lines: Postgres broke the deadlock by failing one of
// them, and the partner's cancel answered 500 (TestJobCancelMidJob, once).
// Here the test holds the job row as a cancel would: each statement must
// then wait without holding any line.
func TestJobLinesAreLockedAfterTheJobRow(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fixture string // puts the job's lines where the statement finds them
		run     func(e *env, jobID int64) error
	}{
		{"settle lines whose attempt ended", `
			WITH a AS (INSERT INTO import_attempts (process_id, attempt, outcome) VALUES (@process, 1, 'FAILED'))
			UPDATE import_job_records SET outcome = 'in_progress', process_id = @process, attempt = 1 WHERE job_id = @job`,
			func(e *env, jobID int64) error { return e.db.ResolveJobLines(e.ctx, jobID, nil) }},
		{"expire lines not started", `UPDATE import_job_records SET outcome = 'staged' WHERE job_id = @job`,
			func(e *env, jobID int64) error {
				return e.db.ExpireJobLines(e.ctx, jobID, dataimport.Errorf(dataimport.CodeInvalid, "window ended"))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			sup := e.supplier("LOCKS", false)
			job := e.receivingJob(sup, "Lock Order Partner")
			_, err := e.db.ReceiveJob(e.ctx, job.ID, 0, func() int64 { return 1 }, func() []byte { return make([]byte, 32) },
				func(emit func(postgres.JobLine) error) error { return emitLines(emit, 1, 20) })
			e.must(err)
			process := e.stage(sup, "LOCK-1", nil)
			e.must(e.g.Exec(tc.fixture, sql.Named("process", process), sql.Named("job", job.ID)).Error)
			e.must(e.g.Exec(`UPDATE import_jobs SET n_in_progress = 20, n_staged = 20 WHERE id = ?`, job.ID).Error)
			sqlDB, err := e.g.DB()
			e.must(err)
			cancel, err := sqlDB.BeginTx(e.ctx, nil)
			e.must(err)
			defer func() { _ = cancel.Rollback() }()
			e.must(cancel.QueryRowContext(e.ctx, `SELECT 1 FROM import_jobs WHERE id = $1 FOR UPDATE`, job.ID).Scan(new(int)))

			done := make(chan error, 1)
			go func() { done <- tc.run(e, job.ID) }()
			waitForLockWait(t, sqlDB)
			// The statement waits; the lines must still be free for the holder of the job row.
			var n int
			if err := cancel.QueryRowContext(e.ctx, `SELECT count(*) FROM (SELECT 1 FROM import_job_records WHERE job_id = $1 FOR UPDATE NOWAIT) l`, job.ID).Scan(&n); err != nil {
				t.Fatalf("the job's lines were locked by a statement waiting for the job row: %v", err)
			}
			e.must(cancel.Rollback())
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			var failed int
			e.scalar(&failed, `SELECT n_failed FROM import_jobs WHERE id = ?`, job.ID)
			if n != 20 || failed != 20 {
				t.Fatalf("%d lines locked, %d failed; want 20 and 20", n, failed)
			}
		})
	}
}

// waitForLockWait waits until some backend of this database waits for a lock.
func waitForLockWait(t *testing.T, db *sql.DB) {
	t.Helper()
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	for ctx.Err() == nil {
		var waiting int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err == nil && waiting > 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no statement came to wait for the job row")
}
