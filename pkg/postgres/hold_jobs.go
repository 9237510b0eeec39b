package postgres

import (
	"context"
	"fmt"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// EndJobOnComplete ends what of a job had not started when its supplier's
// migration was set Complete: attempts started and not committed are
// cancelled (with their attempt row and event), lines not started
// (pending, or staged to be created) are cancelled, each with the error
// import_supplier_migration_complete; what was created stays. The job then
// finishes as its lines are all settled (FinishJobIfDone).
func (db *DB) EndJobOnComplete(ctx context.Context, job dataimport.Job) error {
	e := errorJSON(dataimport.SupplierCompleteError(job.SupplierCode))
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("end job %d on complete: %w", job.ID, err)
	}
	defer func() { _ = tx.Rollback() }()
	// The job row first, as every writer of lines and counters (job_settle.go).
	if _, err := tx.ExecContext(ctx, `SELECT 1 FROM import_jobs WHERE id = $1 FOR NO KEY UPDATE`, job.ID); err != nil {
		return fmt.Errorf("end job %d on complete: %w", job.ID, err)
	}
	if _, err := tx.ExecContext(ctx, `
		WITH c AS (
			UPDATE import_processes p SET status = 'UNKNOWN', v2_status = 'CANCELLED', scheduled = false, dry_run = false,
			       latest_error = $3::jsonb, modified_at = now()
			  FROM import_job_records r
			 WHERE r.job_id = $1 AND r.outcome = 'in_progress' AND p.id = r.process_id AND p.attempt = r.attempt
			   AND p.status = 'IN_PROGRESS' AND p.platform_account_number IS NULL
			RETURNING p.id, p.attempt
		), a AS (
			INSERT INTO import_attempts (process_id, attempt, outcome, error) SELECT id, attempt, 'CANCELLED', $3::jsonb FROM c
			ON CONFLICT (process_id, attempt) DO NOTHING
		)
		INSERT INTO import_process_events (process_id, event, data)
		SELECT id, $2, jsonb_build_object('attempt', attempt, 'api', 'job', 'job_id', $1::bigint, 'error', $3::jsonb) FROM c`,
		job.ID, dataimport.EventCancelled, *e); err != nil {
		return fmt.Errorf("end job %d on complete: attempts: %w", job.ID, err)
	}
	if _, err := tx.ExecContext(ctx, resolveJobLines, job.ID); err != nil {
		return fmt.Errorf("end job %d on complete: resolve: %w", job.ID, err)
	}
	// Lines not started: their counters move with them.
	if _, err := tx.ExecContext(ctx, `
		WITH t AS (
			SELECT line, outcome FROM import_job_records
			 WHERE job_id = $1 AND (outcome = 'pending' OR (outcome = 'staged' AND attempt IS NULL AND $2))
			   FOR UPDATE
		), u AS (
			UPDATE import_job_records r SET outcome = 'cancelled', errors = $3::jsonb, modified_at = now()
			  FROM t WHERE r.job_id = $1 AND r.line = t.line
			RETURNING t.outcome AS was
		)
		UPDATE import_jobs SET n_cancelled = n_cancelled + (SELECT count(*) FROM u),
		       n_pending = n_pending - (SELECT count(*) FROM u WHERE was = 'pending'),
		       n_staged = n_staged - (SELECT count(*) FROM u WHERE was = 'staged'), modified_at = now()
		 WHERE id = $1`, job.ID, job.Create, *e); err != nil {
		return fmt.Errorf("end job %d on complete: lines: %w", job.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("end job %d on complete: commit: %w", job.ID, err)
	}
	return nil
}
