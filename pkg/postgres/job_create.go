package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Creating a job's staged accounts: picking candidates, starting their
// attempts under the guard, and the creation batch.

// JobCandidate is a job line whose account is to be created: its process
// and the attempt it names (the current one, before starting; the started
// one after).
type JobCandidate struct {
	Line      int64
	ProcessID int64
	Attempt   int
}

// JobStartCandidates lists up to limit staged lines of the job after line
// `after` waiting for creation, with their process's current attempt.
func (db *DB) JobStartCandidates(ctx context.Context, jobID, after int64, limit int) ([]JobCandidate, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT r.line, r.process_id, p.attempt FROM import_job_records r
		JOIN import_processes p ON p.id = r.process_id
		WHERE r.job_id = $1 AND r.line > $3 AND r.outcome = 'staged' AND r.attempt IS NULL ORDER BY r.line LIMIT $2`, jobID, limit, after)
	if err != nil {
		return nil, fmt.Errorf("job start candidates: %w", err)
	}
	defer rows.Close()
	var out []JobCandidate
	for rows.Next() {
		var c JobCandidate
		if err := rows.Scan(&c.Line, &c.ProcessID, &c.Attempt); err != nil {
			return nil, fmt.Errorf("job start candidates: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// BeginJobAttempts starts the next attempt of each candidate's process, as
// the v1 create does (IN_PROGRESS in both views, scheduled and started
// events), provided the job is still PROCESSING, and moves those lines to
// in_progress. It returns the candidates started, with their new attempt.
// A candidate not started is settled when its process says why (imported,
// skipped, being imported elsewhere); otherwise it stays staged for the next
// round.
func (db *DB) BeginJobAttempts(ctx context.Context, job dataimport.Job, cands []JobCandidate) ([]JobCandidate, error) {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin job attempts: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := jobGuard(ctx, tx, job.ID); err != nil {
		return nil, err
	}
	// A Paused or Complete supplier starts nothing (hold.go).
	if err := supplierGuard(ctx, tx, job.SupplierID); err != nil {
		return nil, err
	}
	ids := make([]int64, len(cands))
	atts := make([]int64, len(cands))
	lns := make([]int64, len(cands))
	byID := make(map[int64]JobCandidate, len(cands))
	for i, c := range cands {
		ids[i], atts[i], lns[i] = c.ProcessID, int64(c.Attempt), c.Line
		byID[c.ProcessID] = c
	}
	rows, err := tx.QueryContext(ctx, `
		WITH s AS (
			UPDATE import_processes p
			   SET status = 'IN_PROGRESS', v2_status = 'IN_PROGRESS', scheduled = true, window_start = NULL, window_end = NULL,
			       attempt = p.attempt + 1, dry_run = $3, operations_team_id = $4, attempt_organisation_id = $9, job_attempt = true, modified_at = now()
			  FROM unnest($1::bigint[], $2::bigint[], $8::bigint[]) AS u(id, attempt, line)
			  JOIN import_job_records r ON r.job_id = $5 AND r.line = u.line
			 -- Only the version this line staged: a stage since (v1, v2,
			 -- another job) would make the job create another payload.
			 WHERE p.id = u.id AND p.attempt = u.attempt AND p.status = 'UNKNOWN' AND NOT p.skipped AND p.staged_version > 0
			   AND p.staged_version = r.staged_version
			RETURNING p.id, p.attempt, p.dry_run
		), e AS (
			INSERT INTO import_process_events (process_id, event, data)
			SELECT s.id, ev.name, jsonb_build_object('attempt', s.attempt, 'dry_run', s.dry_run, 'api', 'job', 'job_id', $5::bigint)
			  FROM s, unnest(ARRAY[$6, $7]::text[]) WITH ORDINALITY AS ev(name, n) ORDER BY s.id, ev.n
		)
		SELECT id, attempt FROM s`, ids, atts, job.DryRun, job.TeamID, job.ID, dataimport.EventScheduled, dataimport.EventStarted, lns, job.OrganisationID)
	if err != nil {
		return nil, fmt.Errorf("begin job attempts: %w", err)
	}
	var started []JobCandidate
	for rows.Next() {
		var id int64
		var att int
		if err := rows.Scan(&id, &att); err != nil {
			rows.Close()
			return nil, fmt.Errorf("begin job attempts: %w", err)
		}
		c := byID[id]
		c.Attempt = att
		started = append(started, c)
		delete(byID, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("begin job attempts: %w", err)
	}
	ups := make([]lineUpdate, 0, len(cands))
	delta := map[string]int64{}
	lines := make([]int64, 0, len(started))
	attempts := make([]int64, 0, len(started))
	for _, c := range started {
		lines, attempts = append(lines, c.Line), append(attempts, int64(c.Attempt))
	}
	if len(started) > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE import_job_records r SET outcome = 'in_progress', attempt = u.attempt, modified_at = now()
			FROM unnest($2::bigint[], $3::bigint[]) AS u(line, attempt) WHERE r.job_id = $1 AND r.line = u.line`, job.ID, lines, attempts); err != nil {
			return nil, fmt.Errorf("begin job attempts: %w", err)
		}
		delta[dataimport.OutcomeStaged] -= int64(len(started))
		delta[dataimport.OutcomeInProgress] += int64(len(started))
	}
	for id, c := range byID {
		var p processRow
		var lineVersion int
		err := tx.QueryRowContext(ctx, `SELECT p.status, p.skipped, p.platform_account_number, p.external_account_number, p.staged_version,
			coalesce(r.staged_version, 0) FROM import_processes p JOIN import_job_records r ON r.job_id = $2 AND r.line = $3 WHERE p.id = $1`, id, job.ID, c.Line).
			Scan(&p.Status, &p.Skipped, &p.PlatformAccountNumber, &p.ExternalAccountNumber, &p.StagedVersion, &lineVersion)
		if err != nil {
			return nil, fmt.Errorf("begin job attempts: line %d: %w", c.Line, err)
		}
		dp := p.domain()
		var e *dataimport.Error
		switch {
		case dp.Status == dataimport.StatusUnknown && !dp.Skipped && dp.StagedVersion != lineVersion:
			e = dataimport.StagedVersionReplaced(lineVersion, dp.StagedVersion)
		case dp.Status == dataimport.StatusUnknown && !dp.Skipped:
			continue // the attempt moved on meanwhile: next round
		default:
			e, _ = dataimport.AsError(refusal(dp))
		}
		u := lineUpdate{line: c.Line, outcome: dataimport.OutcomeFailed, errJSON: errorJSON(e)}
		if dp.Imported() {
			u.outcome, u.platform = dataimport.OutcomeAlreadyImported, &dp.PlatformAccountNumber
		}
		ups = append(ups, u)
		delta[dataimport.OutcomeStaged]--
		delta[u.outcome]++
	}
	if err := applyLineUpdates(ctx, tx, job.ID, ups); err != nil {
		return nil, err
	}
	if err := moveCounters(ctx, tx, job.ID, delta); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("begin job attempts: commit: %w", err)
	}
	return started, nil
}

// JobInFlight lists up to limit lines of the job being created whose
// attempt is still running with no outcome: after a worker died, these are
// created again (the attempt guard makes a second run harmless); lines held
// by a pause (PENDING) are among them, to start again once it is lifted.
func (db *DB) JobInFlight(ctx context.Context, jobID int64, limit int) ([]JobCandidate, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT r.line, r.process_id, r.attempt FROM import_job_records r
		JOIN import_processes p ON p.id = r.process_id AND p.attempt = r.attempt
		 AND (p.v2_status = 'IN_PROGRESS' OR (p.v2_status = 'PENDING' AND p.scheduled))
		WHERE r.job_id = $1 AND r.outcome = 'in_progress' ORDER BY r.line LIMIT $2`, jobID, limit)
	if err != nil {
		return nil, fmt.Errorf("job lines in flight: %w", err)
	}
	defer rows.Close()
	var out []JobCandidate
	for rows.Next() {
		var c JobCandidate
		if err := rows.Scan(&c.Line, &c.ProcessID, &c.Attempt); err != nil {
			return nil, fmt.Errorf("job lines in flight: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// LoadManyForCreation is LoadForCreation for several processes in one query.
func (db *DB) LoadManyForCreation(ctx context.Context, processIDs []int64) (map[int64]LoadedProcess, error) {
	rows, err := db.sql.QueryContext(ctx, `
		SELECT p.id, p.supplier_id, p.external_account_number, p.status, p.skipped, p.staged_version, p.attempt,
		       p.dry_run, p.v2_status, p.window_start, p.window_end, p.latest_error, p.platform_account_number, p.account_created_at, p.created_at, p.modified_at,
		       s.id, s.code, s.status, s.document_root, s.welcome_email, s.phone_region, s.require_products, s.market, v.payload::text
		  FROM import_processes p
		  JOIN import_suppliers s ON s.id = p.supplier_id
		  LEFT JOIN import_process_versions v ON v.process_id = p.id AND v.version = p.staged_version
		 WHERE p.id = ANY($1)`, processIDs)
	if err != nil {
		return nil, fmt.Errorf("load processes: %w", err)
	}
	defer rows.Close()
	out := make(map[int64]LoadedProcess, len(processIDs))
	for rows.Next() {
		var p processRow
		var sup supplierRow
		var payload *string
		if err := rows.Scan(&p.ID, &p.SupplierID, &p.ExternalAccountNumber, &p.Status, &p.Skipped, &p.StagedVersion, &p.Attempt,
			&p.DryRun, &p.V2Status, &p.WindowStart, &p.WindowEnd, &p.LatestError, &p.PlatformAccountNumber, &p.AccountCreatedAt, &p.CreatedAt, &p.ModifiedAt,
			&sup.ID, &sup.Code, &sup.Status, &sup.DocumentRoot, &sup.WelcomeEmail, &sup.PhoneRegion, &sup.RequireProducts, &sup.Market, &payload); err != nil {
			return nil, fmt.Errorf("load processes: %w", err)
		}
		lp := LoadedProcess{Process: p.domain(), Supplier: sup.domain()}
		if payload != nil {
			lp.Payload = []byte(*payload)
		}
		out[p.ID] = lp
	}
	return out, rows.Err()
}

// CreateJobAccounts creates the accounts of a job's batch in one
// transaction (see createAccountsOnce). If the batch fails, each account is
// created alone, so a bad account fails alone and its neighbours are
// created. errs[i] is the i-th account's error (ErrJobNotProcessing for
// all once the job was cancelled).
func (db *DB) CreateJobAccounts(ctx context.Context, jobID int64, ins []CreationInput) ([]CreationResult, []error) {
	res := make([]CreationResult, len(ins))
	errs := make([]error, len(ins))
	if len(ins) == 0 {
		return res, errs
	}
	numbers := make([]string, len(ins))
	for i := range numbers {
		n, err := platformNumbers()
		if err != nil {
			for j := range errs {
				errs[j] = err
			}
			return res, errs
		}
		numbers[i] = n
	}
	if len(ins) > 1 {
		out, err := db.createAccountsOnce(ctx, jobID, ins, numbers)
		if err == nil {
			copy(res, out)
			return res, errs
		}
		if errors.Is(err, ErrJobNotProcessing) || errors.Is(err, ErrSupplierNotOngoing) || ctx.Err() != nil {
			for i := range errs {
				errs[i] = err
			}
			return res, errs
		}
		batchFallbacks.Add(1)
	}
	for i, in := range ins {
		res[i], errs[i] = db.createJobAccountAlone(ctx, jobID, in, numbers[i])
		if errors.Is(errs[i], ErrJobNotProcessing) || errors.Is(errs[i], ErrSupplierNotOngoing) {
			for j := i + 1; j < len(ins); j++ {
				errs[j] = errs[i]
			}
			break
		}
	}
	return res, errs
}

func (db *DB) createJobAccountAlone(ctx context.Context, jobID int64, in CreationInput, number string) (CreationResult, error) {
	for range 10 {
		out, err := db.createAccountsOnce(ctx, jobID, []CreationInput{in}, []string{number})
		if isConstraint(err, "accounts_platform_account_number_key") {
			if number, err = platformNumbers(); err != nil {
				return CreationResult{}, err
			}
			continue
		}
		if err != nil {
			return CreationResult{}, err
		}
		return out[0], nil
	}
	return CreationResult{}, errors.New("create account: no free platform account number after 10 draws")
}

// batchFallbacks counts multi-account batches that failed and were retried
// account by account (a test probe).
var batchFallbacks atomic.Int64
