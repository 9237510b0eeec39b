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
// Here the test holds the job row as a cancel would: the statement must
// then wait without holding any line.
func TestJobLinesAreLockedAfterTheJobRow(t *testing.T) {
	e := newEnv(t)
	sup := e.supplier("LOCKS", false)
	job := e.receivingJob(sup, "Lock Order Partner")
	_, err := e.db.ReceiveJob(e.ctx, job.ID, 0, func() int64 { return 1 }, func() []byte { return make([]byte, 32) },
		func(emit func(postgres.JobLine) error) error { return emitLines(emit, 1, 20) })
	e.must(err)
	// Lines staged and not started: what ExpireJobLines fails.
	e.must(e.g.Exec(`UPDATE import_job_records SET outcome = 'staged' WHERE job_id = ?`, job.ID).Error)
	sqlDB, err := e.g.DB()
	e.must(err)
	cancel, err := sqlDB.BeginTx(e.ctx, nil)
	e.must(err)
	defer func() { _ = cancel.Rollback() }()
	e.must(cancel.QueryRowContext(e.ctx, `SELECT 1 FROM import_jobs WHERE id = $1 FOR UPDATE`, job.ID).Scan(new(int)))

	done := make(chan error, 1)
	go func() {
		done <- e.db.ExpireJobLines(e.ctx, job.ID, dataimport.Errorf(dataimport.CodeInvalid, "window ended"))
	}()
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
