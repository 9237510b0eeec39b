package postgres

import (
	"context"
	"fmt"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Settling a job's lines once their attempts have outcomes, expiring what
// its window left unstarted, and finishing the job.

// resolveJobLines moves the job's in_progress lines whose attempt has an
// outcome to their final outcome, and the counters with them, in one
// statement: created (with the platform number), failed (with the error),
// cancelled; a dry run that succeeded stays staged and says so.
// resolveJobLinesOf does it for the lines listed in $2 only.
var (
	resolveJobLines   = fmt.Sprintf(resolveJobLinesSQL, "")
	resolveJobLinesOf = fmt.Sprintf(resolveJobLinesSQL, "AND rec.line = ANY($2::bigint[])")
)

const resolveJobLinesSQL = `
	WITH r AS (
		SELECT rec.line, rec.external_account_number, a.outcome, a.error, a.platform_account_number
		  FROM import_job_records rec
		  JOIN import_attempts a ON a.process_id = rec.process_id AND a.attempt = rec.attempt
		 WHERE rec.job_id = $1 AND rec.outcome = 'in_progress' %s
		   FOR UPDATE OF rec
	), u AS (
		UPDATE import_job_records rec
		   SET outcome = CASE r.outcome WHEN 'COMPLETED' THEN 'created' WHEN 'CANCELLED' THEN 'cancelled'
		                                WHEN 'DRY_RUN' THEN 'staged' ELSE 'failed' END,
		       platform_account_number = r.platform_account_number,
		       errors = CASE r.outcome WHEN 'DRY_RUN' THEN jsonb_build_object('code', 'dry_run_rolled_back', 'detail',
		                    'Account would import successfully. Rolled back due to dry run.', 'errors', '[]'::jsonb)
		                    ELSE r.error END,
		       modified_at = now()
		  FROM r WHERE rec.job_id = $1 AND rec.line = r.line
		RETURNING rec.outcome, rec.transfer_balance, rec.opening_transactions, rec.meter_points
	), adopt AS (
		-- FinishAttempt recorded the failure without its job: name it.
		UPDATE import_failures f SET job_id = j.id, line = r.line, organisation_id = j.organisation_id
		  FROM r, import_jobs j
		 WHERE j.id = $1 AND r.outcome = 'FAILED' AND f.supplier_id = j.supplier_id
		   AND f.external_account_number = r.external_account_number AND f.source = 'create'
		   AND f.fingerprint = import_failure_fingerprint(r.error)
	), c AS (SELECT outcome, count(*) AS n FROM u GROUP BY outcome)
	UPDATE import_jobs SET modified_at = now(),
	       n_in_progress = n_in_progress - coalesce((SELECT sum(n) FROM c), 0),
	       n_created = n_created + coalesce((SELECT n FROM c WHERE outcome = 'created'), 0),
	       n_cancelled = n_cancelled + coalesce((SELECT n FROM c WHERE outcome = 'cancelled'), 0),
	       n_staged = n_staged + coalesce((SELECT n FROM c WHERE outcome = 'staged'), 0),
	       n_failed = n_failed + coalesce((SELECT n FROM c WHERE outcome = 'failed'), 0),
	       -- Control totals (CONTRACT §14): the created lines' figures, as they settle.
	       created_transfer_balance = created_transfer_balance + coalesce((SELECT sum(transfer_balance) FROM u WHERE outcome = 'created'), 0),
	       created_opening_transactions = created_opening_transactions + coalesce((SELECT sum(opening_transactions) FROM u WHERE outcome = 'created'), 0),
	       created_meter_points = created_meter_points + coalesce((SELECT sum(meter_points) FROM u WHERE outcome = 'created'), 0)
	 WHERE id = $1`

// ResolveJobLines settles the job's lines whose creation attempt ended,
// whoever ran it (this job's batch, a retried task, the reconciler): those
// listed, or with lines nil every line of the job in flight.
func (db *DB) ResolveJobLines(ctx context.Context, jobID int64, lines []int64) error {
	query, args := resolveJobLines, []any{jobID}
	if lines != nil {
		query, args = resolveJobLinesOf, []any{jobID, lines}
	}
	if err := db.execJobLinesThenCounters(ctx, jobID, query, args...); err != nil {
		return fmt.Errorf("resolve job %d lines: %w", jobID, err)
	}
	return nil
}

// execJobLinesThenCounters runs a statement that updates a job's lines and
// then its counters, with the job row locked first. Every transaction that
// touches both takes the job row before any line (a cancel, a creation
// batch, a staging chunk); a statement that locked lines and then waited
// for the job row deadlocked with a cancel, which Postgres broke by failing
// one of them: the partner's cancel answered 500.
func (db *DB) execJobLinesThenCounters(ctx context.Context, jobID int64, query string, args ...any) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `SELECT 1 FROM import_jobs WHERE id = $1 FOR NO KEY UPDATE`, jobID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, query, args...); err != nil {
		return err
	}
	return tx.Commit()
}

// FinishJobIfDone marks the job COMPLETED once no line is on its way. The
// job row is locked before the lines are looked at, in a statement of its
// own: a retry (retry.go) or a re-run (ApplyJobCorrections) moves lines
// back under that lock, and a single UPDATE that waited for it would
// re-check the job row but judge the lines by its older snapshot,
// completing the job over the lines just put back.
func (db *DB) FinishJobIfDone(ctx context.Context, jobID int64) (bool, error) {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("finish job %d: %w", jobID, err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `SELECT 1 FROM import_jobs WHERE id = $1 FOR NO KEY UPDATE`, jobID); err != nil {
		return false, fmt.Errorf("finish job %d: %w", jobID, err)
	}
	// The last rate sample is taken with the change of state: a reader
	// that sees the job COMPLETED sees its final view.
	res, err := tx.ExecContext(ctx, `UPDATE import_jobs j SET state = 'COMPLETED', finished_at = now(), modified_at = now(),
		lease_owner = NULL, lease_until = NULL, rate_samples = `+rateSampled+`
		WHERE id = $1 AND state = 'PROCESSING' AND NOT EXISTS (
			SELECT 1 FROM import_job_records r WHERE r.job_id = j.id
			   AND (r.outcome IN ('pending', 'in_progress') OR (r.outcome = 'duplicate_line' AND r.staged_version IS NULL)
			        OR (r.outcome = 'staged' AND j.create_accounts AND r.attempt IS NULL)))`, jobID)
	if err != nil {
		return false, fmt.Errorf("finish job %d: %w", jobID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("finish job %d: %w", jobID, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("finish job %d: commit: %w", jobID, err)
	}
	return n == 1, nil
}

// ExpireJobLines fails the job's staged lines not started yet: their
// schedule window ended (e says so).
func (db *DB) ExpireJobLines(ctx context.Context, jobID int64, e *dataimport.Error) error {
	err := db.execJobLinesThenCounters(ctx, jobID, `
		WITH u AS (
			UPDATE import_job_records SET outcome = 'failed', errors = $2::jsonb, modified_at = now()
			 WHERE job_id = $1 AND outcome = 'staged' AND attempt IS NULL
			RETURNING line, external_account_number
		), recorded AS (`+fmt.Sprintf(upsertFailures, `
			SELECT j.organisation_id, j.supplier_id, u.external_account_number, 'create', $2::jsonb, j.id, u.line::bigint, 1::bigint
			  FROM u, import_jobs j WHERE j.id = $1`)+`
		)
		UPDATE import_jobs SET n_staged = n_staged - (SELECT count(*) FROM u), n_failed = n_failed + (SELECT count(*) FROM u), modified_at = now()
		 WHERE id = $1`, jobID, *errorJSON(e))
	if err != nil {
		return fmt.Errorf("expire job %d lines: %w", jobID, err)
	}
	return nil
}
