package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Cancelling a job.

// CancelJob cancels a RECEIVING or PROCESSING job of the organisation. It
// waits for creation batches under way (they hold a share lock on the job),
// so once it returns no account of the job is created any more: lines not
// started become cancelled, attempts started and not committed are cancelled
// (with their event, as a v2 cancel), and what was created stays. A
// finished job is returned as it is.
func (db *DB) CancelJob(ctx context.Context, orgID, jobID int64) (JobView, error) {
	if err := db.cancelJob(ctx, orgID, jobID, nil); err != nil {
		return JobView{}, err
	}
	return db.job(ctx, orgID, jobID)
}

// cancelJob is CancelJob; orgID 0 is any organisation's job (an
// operator), and audit, when set, writes the audit row of a cancel that
// changed the job, with the state it had, in the cancel's transaction.
func (db *DB) cancelJob(ctx context.Context, orgID, jobID int64, audit func(tx *sql.Tx, was string) error) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cancel job: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var state string
	err = tx.QueryRowContext(ctx, `SELECT state FROM import_jobs WHERE id = $1 AND ($2::bigint = 0 OR organisation_id = $2) FOR UPDATE`, jobID, orgID).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrJobNotFound
	}
	if err != nil {
		return fmt.Errorf("cancel job: %w", err)
	}
	if dataimport.JobState(state).Finished() {
		return nil
	}
	if audit != nil {
		if err := audit(tx, state); err != nil {
			return err
		}
	}
	if dataimport.JobState(state) == dataimport.JobReceiving {
		// Nothing of an upload still arriving is kept: its lines so far go
		// (the receiving request's next batch finds the job cancelled).
		if _, err := tx.ExecContext(ctx, `UPDATE import_jobs SET state = 'CANCELLED', finished_at = now(), modified_at = now() WHERE id = $1`, jobID); err != nil {
			return fmt.Errorf("cancel job: state: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM import_job_records WHERE job_id = $1`, jobID); err != nil {
			return fmt.Errorf("cancel job: lines: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM import_job_errors WHERE job_id = $1`, jobID); err != nil {
			return fmt.Errorf("cancel job: line errors: %w", err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("cancel job: commit: %w", err)
		}
		return nil
	}
	steps := []struct {
		what string
		sql  string
		args []any
	}{
		{"state", `UPDATE import_jobs SET state = 'CANCELLED', finished_at = now(), modified_at = now(), lease_owner = NULL, lease_until = NULL WHERE id = $1`, []any{jobID}},
		// Attempts started for the job and not committed: cancelled, with
		// their attempt row and event, in this transaction.
		{"attempts", `
			WITH c AS (
				UPDATE import_processes p SET status = 'UNKNOWN', v2_status = 'CANCELLED', scheduled = false, dry_run = false, modified_at = now()
				  FROM import_job_records r
				 WHERE r.job_id = $1 AND r.outcome = 'in_progress' AND p.id = r.process_id AND p.attempt = r.attempt
				   AND p.status = 'IN_PROGRESS' AND p.platform_account_number IS NULL
				RETURNING p.id, p.attempt
			), a AS (
				INSERT INTO import_attempts (process_id, attempt, outcome) SELECT id, attempt, 'CANCELLED' FROM c
				ON CONFLICT (process_id, attempt) DO NOTHING
			)
			INSERT INTO import_process_events (process_id, event, data)
			SELECT id, $2, jsonb_build_object('attempt', attempt, 'api', 'job', 'job_id', $1::bigint) FROM c`, []any{jobID, dataimport.EventCancelled}},
		{"resolve", resolveJobLines, []any{jobID}},
		{"lines", `
			WITH t AS (
				SELECT line, outcome FROM import_job_records
				 WHERE job_id = $1 AND (outcome IN ('pending', 'in_progress') OR (outcome = 'staged' AND attempt IS NULL AND $2))
				   FOR UPDATE
			), u AS (
				UPDATE import_job_records r SET outcome = 'cancelled', modified_at = now()
				  FROM t WHERE r.job_id = $1 AND r.line = t.line
				RETURNING t.outcome AS was
			), d AS (
				UPDATE import_job_records SET staged_version = 0 WHERE job_id = $1 AND outcome = 'duplicate_line' AND staged_version IS NULL
			)
			UPDATE import_jobs SET n_cancelled = n_cancelled + (SELECT count(*) FROM u),
			       n_pending = n_pending - (SELECT count(*) FROM u WHERE was = 'pending'),
			       n_in_progress = n_in_progress - (SELECT count(*) FROM u WHERE was = 'in_progress'),
			       n_staged = n_staged - (SELECT count(*) FROM u WHERE was = 'staged')
			 WHERE id = $1`, nil},
	}
	var create bool
	if err := tx.QueryRowContext(ctx, `SELECT create_accounts FROM import_jobs WHERE id = $1`, jobID).Scan(&create); err != nil {
		return fmt.Errorf("cancel job: %w", err)
	}
	steps[3].args = []any{jobID, create}
	for _, s := range steps {
		if _, err := tx.ExecContext(ctx, s.sql, s.args...); err != nil {
			return fmt.Errorf("cancel job: %s: %w", s.what, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cancel job: commit: %w", err)
	}
	return nil
}
