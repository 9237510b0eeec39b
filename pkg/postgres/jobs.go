package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Bulk import jobs (CONTRACT §11). A job's lines go through the same import
// processes, staging statement, attempt guard and creation batch as the
// per-account endpoints; this file adds the job, its lines and counters.
// Every change of a line's outcome moves the job's counters in the same
// statement or transaction, so the counters are exact and nothing is
// counted twice, whatever is retried.

// ErrJobNotFound answers a job that does not exist or belongs to another
// organisation (no leak).
var ErrJobNotFound = dataimport.Errorf(dataimport.CodeNotFound, "No import job found with this id.")

// NewJob is what a job upload starts with.
type NewJob struct {
	OrganisationID int64
	SupplierID     int64
	TeamID         *int64
	Create         bool
	DryRun         bool
	Window         dataimport.Window
	IdempotencyKey string                     // empty: none
	Declared       dataimport.ControlDeclared // the control totals the partner declared (CONTRACT §14); nil: none
	Query          string                     // the request's query string, compared on a retry with the same key
	// KeyTTL is how long the key names its job: a key older than that is
	// free again (a new job; the old one stays, without its key). 0: forever.
	KeyTTL time.Duration
}

const jobColumns = `j.id, j.organisation_id, j.supplier_id, s.code, j.operations_team_id, j.state, j.create_accounts, j.dry_run, j.window_start, j.window_end,
	j.error, j.body_bytes, j.n_received, j.n_pending, j.n_invalid, j.n_duplicate_line, j.n_staged, j.n_in_progress, j.n_created,
	j.n_already_imported, j.n_failed, j.n_cancelled, j.created_at, j.received_at, j.finished_at, j.modified_at, j.rate_samples::text, s.status,
	coalesce(j.control_declared::text, ''), j.received_transfer_balance::text, j.received_opening_transactions::text, j.received_meter_points,
	j.created_transfer_balance::text, j.created_opening_transactions::text, j.created_meter_points,
	CASE WHEN j.compacted_at >= j.finished_at THEN j.compacted_at END`

type rowScanner interface{ Scan(dest ...any) error }

func scanJob(r rowScanner, rate *[]RateSample) (dataimport.Job, error) {
	var j dataimport.Job
	var errJSON []byte
	var samples, supplierStatus, declared string
	c := &j.Counters
	ctl := &j.Control
	err := r.Scan(&j.ID, &j.OrganisationID, &j.SupplierID, &j.SupplierCode, &j.TeamID, &j.State, &j.Create, &j.DryRun, &j.WindowStart, &j.WindowEnd,
		&errJSON, &j.BodyBytes, &c.Received, &c.Pending, &c.Invalid, &c.DuplicateLine, &c.Staged, &c.InProgress, &c.Created,
		&c.AlreadyImported, &c.Failed, &c.Cancelled, &j.CreatedAt, &j.ReceivedAt, &j.FinishedAt, &j.ModifiedAt, &samples, &supplierStatus,
		&declared, &ctl.Received.TransferBalance, &ctl.Received.OpeningTransactions, &ctl.Received.MeterPoints,
		&ctl.Created.TransferBalance, &ctl.Created.OpeningTransactions, &ctl.Created.MeterPoints, &j.CompactedAt)
	if err != nil {
		return j, err
	}
	// A job of a Paused supplier starts no creation until it is Ongoing again.
	if !j.State.Finished() && dataimport.SupplierStatus(supplierStatus) == dataimport.SupplierPaused {
		j.Held = dataimport.HeldSupplierPaused
	}
	if declared != "" {
		if err := json.Unmarshal([]byte(declared), &ctl.Declared); err != nil {
			return j, fmt.Errorf("job %d control totals: %w", j.ID, err)
		}
	}
	j.CountAccounts()
	if len(errJSON) > 0 {
		var e dataimport.Error
		if json.Unmarshal(errJSON, &e) == nil {
			j.Error = &e
		}
	}
	if rate != nil {
		_ = json.Unmarshal([]byte(samples), rate)
	}
	return j, nil
}

// RateSample is one (unix seconds, lines done) sample of a job's progress.
type RateSample struct {
	T float64 `json:"t"`
	D int64   `json:"d"`
}

// JobView is a job with its progress samples of the last minute.
type JobView struct {
	dataimport.Job
	Rate []RateSample
}

// IdempotentJob is the job an upload with an Idempotency-Key already made.
type IdempotentJob struct {
	Job   dataimport.Job
	Query string
	Stale bool // RECEIVING and its upload's heartbeat stopped: a retry may take it over
	// BodySHA256 is the digest of the body it received (nil until received).
	BodySHA256 []byte
}

// Job reads one job of the organisation.
func (db *DB) Job(ctx context.Context, orgID, jobID int64) (JobView, error) {
	return db.job(ctx, orgID, jobID)
}

func (db *DB) job(ctx context.Context, orgID, jobID int64) (JobView, error) {
	var v JobView
	row := db.sql.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM import_jobs j JOIN import_suppliers s ON s.id = j.supplier_id
		WHERE j.id = $1 AND j.organisation_id = $2`, jobID, orgID)
	j, err := scanJob(row, &v.Rate)
	if errors.Is(err, sql.ErrNoRows) {
		return v, ErrJobNotFound
	}
	if err != nil {
		return v, fmt.Errorf("load job %d: %w", jobID, err)
	}
	v.Job = j
	return v, nil
}

// Jobs lists the organisation's jobs, newest first, up to limit, before
// the given id (0: from the newest).
func (db *DB) Jobs(ctx context.Context, orgID int64, before int64, limit int) ([]JobView, error) {
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := db.sql.QueryContext(ctx, `SELECT `+jobColumns+` FROM import_jobs j JOIN import_suppliers s ON s.id = j.supplier_id
		WHERE j.organisation_id = $1 AND j.id < $2 ORDER BY j.id DESC LIMIT $3`, orgID, before, limit)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	defer rows.Close()
	var out []JobView
	for rows.Next() {
		var v JobView
		j, err := scanJob(rows, &v.Rate)
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		v.Job = j
		out = append(out, v)
	}
	return out, rows.Err()
}

// EachJobRecord calls fn for every line of the job whose outcome is one of
// outcomes (all when empty), in line order, streaming from Postgres.
func (db *DB) EachJobRecord(ctx context.Context, jobID int64, outcomes []string, fn func(dataimport.JobRecord) error) error {
	// The lines of an upload still being received are not the job's yet.
	// An invalid line's error is shared by the job's lines with the same
	// error (import_job_errors, by hash); a line's own errors win.
	q := `SELECT r.line, coalesce(r.external_account_number, ''), r.outcome, r.platform_account_number,
		       coalesce(r.errors::text, e.error::text, ''), coalesce(r.history::text, '')
		FROM import_job_records r LEFT JOIN import_job_errors e ON e.job_id = r.job_id AND e.hash = r.error_hash
		WHERE r.job_id = $1
		 AND EXISTS (SELECT 1 FROM import_jobs j WHERE j.id = $1 AND j.state <> 'RECEIVING')`
	args := []any{jobID}
	if len(outcomes) > 0 {
		q += ` AND r.outcome = ANY($2)`
		args = append(args, outcomes)
	}
	rows, err := db.readSQL.QueryContext(ctx, q+` ORDER BY r.line`, args...)
	if err != nil {
		return fmt.Errorf("job results: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r dataimport.JobRecord
		var errs, history string
		if err := rows.Scan(&r.Line, &r.ExternalAccountNumber, &r.Outcome, &r.PlatformAccountNumber, &errs, &history); err != nil {
			return fmt.Errorf("job results: %w", err)
		}
		r.Errors = []dataimport.FieldError{}
		r.History = lineHistory(history)
		if errs != "" {
			var e dataimport.Error
			if json.Unmarshal([]byte(errs), &e) == nil {
				r.Code, r.Detail = e.Code, e.Detail
				if len(e.Errors) > 0 {
					r.Errors = e.Errors
				}
			}
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return rows.Err()
}
