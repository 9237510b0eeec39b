package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/queue"
)

// Re-running failed creations (CONTRACT §13) from their staged payloads,
// once what made them fail was fixed elsewhere (a product loaded, a vendor
// back). Nothing here creates an account: a job's failed lines go back to
// its queue (staged, or pending when staging itself refused them), and a
// failure outside any job becomes a scheduled attempt, as a v2 create
// without a new payload. Both then run through the one pipeline, under the
// cluster-wide cap, guarded by the attempt so that each account is created
// once, with every counter moved in the transaction that moves its lines.

// Audit actions of retries.
const (
	AuditFailuresRetry = "failures.retry" // the console's or importctl's retry of a filter's failures
	AuditJobRetry      = "job.retry"
	AuditJobCancel     = "job.cancel"
	AuditAccountRetry  = "account.retry"
	AuditAccountUnskip = "account.unskip"
)

// Retried is what a retry did: how many creations it re-runs and the tasks
// that start them. The tasks are a wake-up only: a caller without Redis
// may drop them, and the reconciler starts the work within its pass (jobs
// nobody holds) or its grace (scheduled attempts with no task).
type Retried struct {
	N     int
	Tasks []queue.Tasker
}

// retryScope selects failed creations: job lines of live jobs, and
// accounts whose last attempt outside a job failed.
type retryScope struct {
	orgID      int64 // 0: every organisation
	supplierID int64 // 0: only with jobID
	jobID      int64 // 0: every job of the supplier
	code, attr string
	external   string
	// standalone: also accounts that failed outside a job (never with jobID).
	standalone bool
	// anyRecord: a standalone account needs no unresolved failure record
	// of its own (an operator names the account).
	anyRecord bool
}

// RetryFailedCreations re-runs every unresolved failed creation that q
// selects and returns how many: the failed lines of the supplier's jobs
// (PROCESSING or COMPLETED, window not ended) whose field errors match
// q.Code/q.Attr, and the accounts whose last attempt outside a job failed
// that way. q.SupplierID is required; q.OrganisationID (0: all), q.JobID
// (0: all jobs, and the accounts outside jobs) narrow it; q.Source other
// than "create" or "" selects nothing (refusals of data are fixed by
// sending the data again); Since, Resolved, After and Limit are ignored.
// It is an operator action (console, importctl): one audit row under the
// context's actor. The work starts within the reconciler's pass; callers
// with a queue may use RetryFailures to start it at once.
func (db *DB) RetryFailedCreations(ctx context.Context, q FailureQuery) (int, error) {
	r, err := db.RetryFailures(ctx, q)
	return r.N, err
}

// RetryFailures is RetryFailedCreations, with the tasks that start the work.
func (db *DB) RetryFailures(ctx context.Context, q FailureQuery) (Retried, error) {
	if q.SupplierID == 0 {
		return Retried{}, errors.New("retry failures: no supplier")
	}
	if q.Source != "" && q.Source != FailureCreate {
		return Retried{}, nil
	}
	var code string
	if err := db.sql.QueryRowContext(ctx, `SELECT code FROM import_suppliers WHERE id = $1`, q.SupplierID).Scan(&code); err != nil {
		return Retried{}, fmt.Errorf("retry failures: supplier %d: %w", q.SupplierID, err)
	}
	sc := retryScope{orgID: q.OrganisationID, supplierID: q.SupplierID, jobID: q.JobID, code: q.Code, attr: q.Attr, standalone: q.JobID == 0}
	return db.retry(ctx, sc, nil, func(tx *sql.Tx, n int) error {
		return auditSQL(ctx, tx, AuditFailuresRetry, "supplier:"+code, nil, map[string]any{
			"organisation_id": q.OrganisationID, "job": q.JobID, "code": q.Code, "attr": q.Attr, "retried": n})
	})
}

// RetryJob re-runs the failed lines of one job of the organisation (orgID
// 0: an operator, any organisation's job, audited) whose field errors match
// code and attr (empty matches any). A job that does not exist, or is another
// organisation's, is ErrJobNotFound; one whose state forbids it is
// dataimport.CodeJobNotRetryable. Nothing matching is 0, not an error.
func (db *DB) RetryJob(ctx context.Context, orgID, jobID int64, code, attr string) (Retried, error) {
	sc := retryScope{orgID: orgID, jobID: jobID, code: code, attr: attr}
	check := func(ctx context.Context, tx *sql.Tx) error {
		var state string
		var windowEnd *time.Time
		err := tx.QueryRowContext(ctx, `SELECT state, window_end FROM import_jobs WHERE id = $1 AND ($2::bigint = 0 OR organisation_id = $2) FOR NO KEY UPDATE`,
			jobID, orgID).Scan(&state, &windowEnd)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrJobNotFound
		}
		if err != nil {
			return fmt.Errorf("retry job %d: %w", jobID, err)
		}
		if e := dataimport.JobRetryRefusal(dataimport.JobState(state), windowEnd, time.Now()); e != nil {
			return e
		}
		return nil
	}
	var audit func(*sql.Tx, int) error
	if orgID == 0 {
		audit = func(tx *sql.Tx, n int) error {
			return auditSQL(ctx, tx, AuditJobRetry, fmt.Sprintf("job:%d", jobID), nil, map[string]any{"code": code, "attr": attr, "retried": n})
		}
	}
	return db.retry(ctx, sc, check, audit)
}

// RetryAccount re-runs the failed creation of one account, for an
// operator (audited): through its failed line when a live job of the
// supplier has one for its current staged version (so the job's counters
// follow), otherwise as a scheduled attempt from its staged payload. An
// account with nothing to re-run is dataimport.CodeAccountNotRetryable.
func (db *DB) RetryAccount(ctx context.Context, supplierCode, external string) (Retried, error) {
	s, err := db.SupplierByCode(ctx, supplierCode)
	if err != nil {
		return Retried{}, err
	}
	sc := retryScope{supplierID: s.ID, external: external, standalone: true, anyRecord: true}
	target := "account:" + supplierCode + "/" + external
	r, err := db.retry(ctx, sc, nil, func(tx *sql.Tx, n int) error {
		if n == 0 {
			return dataimport.Errorf(dataimport.CodeAccountNotRetryable,
				"account %s/%s has no failed creation to re-run: it is imported, skipped, being created, never staged, or its last attempt did not fail", supplierCode, external)
		}
		return auditSQL(ctx, tx, AuditAccountRetry, target, nil, map[string]any{"retried": n})
	})
	if _, ok := dataimport.AsError(err); ok {
		return r, err
	}
	if err != nil {
		return r, fmt.Errorf("retry %s: %w", target, err)
	}
	return r, nil
}

// retry runs one retry in one transaction: check (if any) first, with the
// job row locked; then the jobs' lines, then the accounts outside jobs;
// audit (if any) last, with how many.
func (db *DB) retry(ctx context.Context, sc retryScope, check func(context.Context, *sql.Tx) error, audit func(*sql.Tx, int) error) (Retried, error) {
	var out Retried
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return out, fmt.Errorf("retry: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if check != nil {
		if err := check(ctx, tx); err != nil {
			return out, err
		}
	}
	if err := retryJobLines(ctx, tx, sc, &out); err != nil {
		return out, err
	}
	if sc.standalone {
		if err := retryStandalone(ctx, tx, sc, &out); err != nil {
			return out, err
		}
	}
	if audit != nil {
		if err := audit(tx, out.N); err != nil {
			return Retried{}, err
		}
	}
	if err := tx.Commit(); err != nil {
		return Retried{}, fmt.Errorf("retry: commit: %w", err)
	}
	return out, nil
}

// matchErrors is the SQL condition "a field error of the error JSON col
// has code c and attr a" (an empty one matches any), as the failures
// filter reads them (import_failure_fields: an error without field errors
// is its envelope code at an empty attr).
func matchErrors(col, c, a string) string {
	return fmt.Sprintf(`((%[2]s::text = '' AND %[3]s::text = '') OR EXISTS (SELECT 1 FROM import_failure_fields(%[1]s) u
		WHERE (%[2]s::text = '' OR u.code = %[2]s) AND (%[3]s::text = '' OR u.attr = %[3]s)))`, col, c, a)
}

// retryJobLines moves the scope's failed lines of live jobs back into
// their jobs' queues and the counters with them. The jobs are locked
// first, in id order (every writer of a job's lines takes its job row
// first). A line that staged its account goes back to staged, to be
// started again; it is re-run only while that version is still the
// account's current one and the account is neither imported, skipped nor
// being created. A line refused at staging (skipped, in progress
// elsewhere) goes back to pending, to be staged again from its payload;
// of several such lines of one account, only the newest job's.
func retryJobLines(ctx context.Context, tx *sql.Tx, sc retryScope, out *Retried) error {
	rows, err := tx.QueryContext(ctx, `SELECT id FROM import_jobs
		WHERE ($1::bigint = 0 OR supplier_id = $1) AND ($2::bigint = 0 OR id = $2) AND ($3::bigint = 0 OR organisation_id = $3)
		  AND state IN ('PROCESSING', 'COMPLETED') AND (window_end IS NULL OR window_end > now()) AND n_failed > 0
		ORDER BY id FOR NO KEY UPDATE`, sc.supplierID, sc.jobID, sc.orgID)
	if err != nil {
		return fmt.Errorf("retry job lines: lock jobs: %w", err)
	}
	var jobIDs []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("retry job lines: %w", err)
		}
		jobIDs = append(jobIDs, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("retry job lines: %w", err)
	}
	if len(jobIDs) == 0 {
		return nil
	}
	rows, err = tx.QueryContext(ctx, `
		WITH c AS (
			SELECT r.job_id, r.line, coalesce(r.staged_version, 0) > 0 AS staged,
			       row_number() OVER (PARTITION BY r.external_account_number, coalesce(r.staged_version, 0) > 0
			                          ORDER BY r.job_id DESC, r.line DESC) AS nth
			  FROM import_job_records r
			  JOIN import_jobs j ON j.id = r.job_id
			  LEFT JOIN import_processes p ON p.supplier_id = j.supplier_id AND p.external_account_number = r.external_account_number
			 WHERE r.job_id = ANY($1) AND r.outcome = 'failed' AND r.external_account_number IS NOT NULL
			   AND ($4::text = '' OR r.external_account_number = $4)
			   AND `+matchErrors("r.errors", "$2", "$3")+`
			   AND (p.id IS NULL OR (p.status = 'UNKNOWN' AND NOT p.skipped AND p.platform_account_number IS NULL))
			   AND (coalesce(r.staged_version, 0) = 0 OR (j.create_accounts AND p.staged_version = r.staged_version))
		), u AS (
			UPDATE import_job_records r
			   SET outcome = CASE WHEN c.staged THEN 'staged' ELSE 'pending' END,
			       staged_version = CASE WHEN c.staged THEN r.staged_version END,
			       attempt = NULL, errors = NULL, platform_account_number = NULL, modified_at = now()
			  FROM c WHERE c.nth = 1 AND r.job_id = c.job_id AND r.line = c.line AND r.outcome = 'failed'
			RETURNING r.job_id, r.outcome
		), n AS (
			SELECT job_id, count(*) FILTER (WHERE outcome = 'staged') AS staged, count(*) FILTER (WHERE outcome = 'pending') AS pending
			  FROM u GROUP BY job_id
		)
		-- Back to PROCESSING; a finished job's wake-up task gets a new name
		-- (its last one may still be held by asynq).
		UPDATE import_jobs j
		   SET n_failed = n_failed - n.staged - n.pending, n_staged = n_staged + n.staged, n_pending = n_pending + n.pending,
		       state = 'PROCESSING', finished_at = NULL, modified_at = now(),
		       lease_epoch = lease_epoch + CASE WHEN j.state = 'COMPLETED' THEN 1 ELSE 0 END,
		       lease_owner = CASE WHEN j.state = 'COMPLETED' THEN NULL ELSE lease_owner END,
		       lease_until = CASE WHEN j.state = 'COMPLETED' THEN NULL ELSE lease_until END
		  FROM n WHERE j.id = n.job_id
		RETURNING j.id, n.staged + n.pending, j.lease_epoch, j.lease_owner IS NULL`, jobIDs, sc.code, sc.attr, sc.external)
	if err != nil {
		return fmt.Errorf("retry job lines: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, n int64
		var epoch int
		var idle bool
		if err := rows.Scan(&id, &n, &epoch, &idle); err != nil {
			return fmt.Errorf("retry job lines: %w", err)
		}
		out.N += int(n)
		if idle {
			out.Tasks = append(out.Tasks, queue.BulkJob{JobID: id, Epoch: epoch})
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("retry job lines: %w", err)
	}
	return nil
}

// retryStandalone schedules a new attempt, from the current staged
// version, of the scope's accounts whose last attempt failed outside a job
// (ERRORED, with an unresolved creation failure not adopted by a job,
// unless the operator named the account), as a v2 create would without a
// new payload: PENDING until a worker takes a slot under the cap. An
// account a live job is about to stage or create is left to that job.
func retryStandalone(ctx context.Context, tx *sql.Tx, sc retryScope, out *Retried) error {
	rows, err := tx.QueryContext(ctx, `
		WITH c AS (
			SELECT p.id FROM import_processes p
			 WHERE p.supplier_id = $1::bigint AND ($4::text = '' OR p.external_account_number = $4)
			   AND p.status = 'UNKNOWN' AND p.v2_status = 'ERRORED' AND NOT p.skipped
			   AND p.platform_account_number IS NULL AND p.staged_version > 0
			   AND `+matchErrors("p.latest_error", "$2", "$3")+`
			   AND ($6::boolean OR p.external_account_number IN (
			        SELECT f.external_account_number FROM import_failures f
			         WHERE f.supplier_id = $1 AND f.source = 'create' AND f.resolved_at IS NULL AND f.job_id IS NULL
			           AND ($5::bigint = 0 OR f.organisation_id IS NULL OR f.organisation_id = $5)))
			   AND NOT EXISTS (SELECT 1 FROM import_job_records r JOIN import_jobs j ON j.id = r.job_id
			        WHERE j.supplier_id = $1 AND j.state = 'PROCESSING' AND r.job_id = j.id
			          AND r.external_account_number = p.external_account_number AND r.outcome IN ('pending', 'staged', 'in_progress'))
			   FOR UPDATE OF p
		), s AS (
			UPDATE import_processes p
			   SET status = 'IN_PROGRESS', v2_status = 'PENDING', scheduled = true, window_start = NULL, window_end = NULL,
			       attempt = p.attempt + 1, dry_run = false, job_attempt = false, modified_at = now(),
			       -- The organisation that asks counts the attempt against its
			       -- cap; an operator's retry keeps the account's last one.
			       attempt_organisation_id = coalesce(nullif($5::bigint, 0), p.attempt_organisation_id)
			  FROM c WHERE p.id = c.id
			RETURNING p.id, p.supplier_id, p.external_account_number, p.attempt
		), e AS (
			INSERT INTO import_process_events (process_id, event, data)
			SELECT s.id, $7::text, jsonb_build_object('attempt', s.attempt, 'dry_run', false, 'api', 'retry') FROM s
		)
		SELECT id, supplier_id, external_account_number, attempt FROM s ORDER BY id`,
		sc.supplierID, sc.code, sc.attr, sc.external, sc.orgID, sc.anyRecord, dataimport.EventScheduled)
	if err != nil {
		return fmt.Errorf("retry accounts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t queue.CreateAccount
		if err := rows.Scan(&t.ProcessID, &t.SupplierID, &t.ExternalAccountNumber, &t.Attempt); err != nil {
			return fmt.Errorf("retry accounts: %w", err)
		}
		out.N++
		out.Tasks = append(out.Tasks, t)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("retry accounts: %w", err)
	}
	return nil
}
