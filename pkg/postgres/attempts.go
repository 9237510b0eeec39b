package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/queue"
	"github.com/gridshift/dataimport/pkg/storable"
)

// Attempt outcomes recorded in import_attempts.
const (
	OutcomeCompleted = "COMPLETED"
	OutcomeFailed    = "FAILED"
	OutcomeDryRun    = "DRY_RUN"
	OutcomeCancelled = "CANCELLED"
)

// StartAttempt moves a staged, UNKNOWN process whose last attempt is
// `after` to IN_PROGRESS as attempt after+1. The condition makes it
// race-free: of many concurrent creates for one account exactly one starts
// the attempt; started=false tells the others to look at the process again
// (and usually wait on that attempt). Naming the attempt up front lets the
// caller take the attempt's concurrency slot before starting it.
func (db *DB) StartAttempt(ctx context.Context, processID int64, after int, teamID, orgID int64, dryRun bool) (attempt int, started bool, err error) {
	// The v1 create holds its slot from the start, so it is IN_PROGRESS in
	// both views at once: scheduled and started in one statement.
	var out []int
	err = db.gorm.WithContext(ctx).Raw(`
		WITH s AS (
			UPDATE import_processes
			   SET status = 'IN_PROGRESS', v2_status = 'IN_PROGRESS', scheduled = true, window_start = NULL, window_end = NULL,
			       attempt = attempt + 1, dry_run = ?, operations_team_id = ?, attempt_organisation_id = nullif(?, 0), job_attempt = false, modified_at = now()
			 WHERE id = ? AND attempt = ? AND status = 'UNKNOWN' AND NOT skipped AND staged_version > 0
			RETURNING id, attempt, dry_run
		), e AS (
			INSERT INTO import_process_events (process_id, event, data)
			SELECT s.id, ev.name, jsonb_build_object('attempt', s.attempt, 'dry_run', s.dry_run, 'api', 'v1')
			  FROM s, unnest(ARRAY[?, ?]::text[]) WITH ORDINALITY AS ev(name, n) ORDER BY ev.n
		)
		SELECT attempt FROM s`, dryRun, teamID, orgID, processID, after, dataimport.EventScheduled, dataimport.EventStarted).Scan(&out).Error
	if err != nil {
		return 0, false, fmt.Errorf("start attempt: %w", err)
	}
	if len(out) == 0 {
		return 0, false, nil
	}
	return out[0], true, nil
}

// errNotQueued is the latest_error of an attempt whose job could not be queued.
var errNotQueued = &dataimport.Error{Code: dataimport.CodeServerError, Domain: dataimport.DomainScheduling,
	Detail: "The account's creation could not be queued. Create it again."}

// AbandonAttempt ends an attempt whose job could not even be enqueued; only
// that attempt is affected.
func (db *DB) AbandonAttempt(ctx context.Context, processID int64, attempt int) error {
	return db.FinishAttempt(ctx, processID, attempt, OutcomeFailed, errNotQueued)
}

// FinishAttempt records an attempt that ended without an account: FAILED
// (validation, scheduling, or retries exhausted; the error is kept as
// latest_error), DRY_RUN or CANCELLED. The v1 status returns to UNKNOWN,
// the v2 status says how it ended, and the timeline says so too, all in one
// transaction. Idempotent per attempt. A cancel ends only an attempt that has
// not started.
func (db *DB) FinishAttempt(ctx context.Context, processID int64, attempt int, outcome string, e *dataimport.Error) error {
	if e != nil && e.Domain == "" {
		c := *e
		c.Domain = dataimport.DomainProcessing
		e = &c
	}
	e = storableError(e)
	var errJSON []byte
	if e != nil {
		var err error
		if errJSON, err = json.Marshal(e); err != nil {
			return fmt.Errorf("encode attempt error: %w", err)
		}
	}
	return db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var ended []struct {
			V2Status              string
			SupplierID            int64
			ExternalAccountNumber string
		}
		err := tx.Raw(`UPDATE import_processes
			   SET status = 'UNKNOWN', scheduled = false, dry_run = false, modified_at = now(),
			       v2_status = CASE WHEN ? = 'DRY_RUN' THEN 'DRY_RUN_SUCCEEDED' WHEN ? = 'CANCELLED' THEN 'CANCELLED'
			                        WHEN dry_run THEN 'DRY_RUN_ERRORED' ELSE 'ERRORED' END,
			       latest_error = CASE WHEN ? = 'FAILED' THEN ?::jsonb ELSE latest_error END
			 WHERE id = ? AND attempt = ? AND status = 'IN_PROGRESS' AND (? <> 'CANCELLED' OR v2_status = 'PENDING')
			RETURNING v2_status, supplier_id, external_account_number`, outcome, outcome, outcome, nullJSON(errJSON), processID, attempt, outcome).Scan(&ended).Error
		if err != nil {
			return fmt.Errorf("finish attempt: %w", err)
		}
		if len(ended) == 0 {
			return nil // already ended (or, for a cancel, started meanwhile)
		}
		err = tx.Exec(`INSERT INTO import_attempts (process_id, attempt, outcome, error) VALUES (?, ?, ?, ?::jsonb)
			ON CONFLICT (process_id, attempt) DO NOTHING`, processID, attempt, outcome, nullJSON(errJSON)).Error
		if err != nil {
			return fmt.Errorf("record attempt: %w", err)
		}
		// A failed creation (not a dry run's) is a failure record, in this
		// transaction; a job's settling names its job and line (job_settle.go).
		if end := ended[0]; outcome == OutcomeFailed && len(errJSON) > 0 && end.V2Status == string(dataimport.V2Errored) {
			if err := tx.Exec(fmt.Sprintf(upsertFailures, `SELECT NULL::bigint, ?::bigint, ?::text, ?::text, ?::jsonb, NULL::bigint, NULL::bigint, 1::bigint`),
				end.SupplierID, end.ExternalAccountNumber, FailureCreate, string(errJSON)).Error; err != nil {
				return fmt.Errorf("record attempt failure: %w", err)
			}
		}
		return recordEvent(tx, processID, endEvents[dataimport.V2Status(ended[0].V2Status)], errorData(attempt, e))
	})
}

// endEvents names the event of each way an attempt can end without an account.
var endEvents = map[dataimport.V2Status]string{
	dataimport.V2Errored:         dataimport.EventErrored,
	dataimport.V2Cancelled:       dataimport.EventCancelled,
	dataimport.V2DryRunSucceeded: dataimport.EventDryRunSucceeded,
	dataimport.V2DryRunErrored:   dataimport.EventDryRunErrored,
}

func nullJSON(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// AttemptOutcome is how an attempt ended.
type AttemptOutcome struct {
	Outcome               string
	Error                 *dataimport.Error
	PlatformAccountNumber string
}

// ErrAttemptRunning means the attempt has no recorded outcome yet.
var ErrAttemptRunning = errors.New("attempt still running")

// Outcome reads an attempt's outcome; ErrAttemptRunning while it runs.
func (db *DB) Outcome(ctx context.Context, processID int64, attempt int) (AttemptOutcome, error) {
	var rows []struct {
		Outcome               string
		Error                 []byte
		PlatformAccountNumber *string
	}
	err := db.gorm.WithContext(ctx).Raw(`SELECT outcome, error, platform_account_number FROM import_attempts
		WHERE process_id = ? AND attempt = ?`, processID, attempt).Scan(&rows).Error
	if err != nil {
		return AttemptOutcome{}, fmt.Errorf("attempt outcome: %w", err)
	}
	if len(rows) == 0 {
		return AttemptOutcome{}, ErrAttemptRunning
	}
	out := AttemptOutcome{Outcome: rows[0].Outcome}
	if rows[0].PlatformAccountNumber != nil {
		out.PlatformAccountNumber = *rows[0].PlatformAccountNumber
	}
	if len(rows[0].Error) > 0 {
		var e dataimport.Error
		if json.Unmarshal(rows[0].Error, &e) == nil {
			out.Error = &e
		}
	}
	return out, nil
}

// StuckProcess is an IN_PROGRESS process the reconciler checks on.
type StuckProcess struct {
	ProcessID             int64
	SupplierID            int64
	ExternalAccountNumber string
	Attempt               int
	DryRun                bool
	V2Status              dataimport.V2Status // PENDING: scheduled, holds no slot yet; IN_PROGRESS: holds its slot
	WindowStart           *time.Time
	ModifiedAt            time.Time
	OrganisationID        int64 // the attempt's organisation (0: not recorded)
}

// InProgressSince lists up to limit processes IN_PROGRESS since before the
// cut-off, in (modified_at, id) order, starting after the given one (zero
// value: from the start). Paging with it reaches every such process, however
// many there are.
func (db *DB) InProgressSince(ctx context.Context, before time.Time, after StuckProcess, limit int) ([]StuckProcess, error) {
	var out []StuckProcess
	err := db.gorm.WithContext(ctx).Raw(`
		SELECT id AS process_id, supplier_id, external_account_number, attempt, dry_run, v2_status, window_start, modified_at,
		       coalesce(attempt_organisation_id, 0) AS organisation_id
		  FROM import_processes
		 WHERE status = 'IN_PROGRESS' AND modified_at < ? AND (modified_at, id) > (?, ?)
		 ORDER BY modified_at, id LIMIT ?`, before, after.ModifiedAt, after.ProcessID, limit).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("in-progress processes: %w", err)
	}
	return out, nil
}

// InProgressSlotHolders names the slot of every attempt in progress with
// its owner (supplier, organisation): what the cluster-wide and the
// per-owner counts must hold again when Redis lost them (see
// queue.Semaphore.WithOwnedRecount). The partial index on processes in
// progress finds them without a scan.
func (db *DB) InProgressSlotHolders(ctx context.Context) ([]queue.Held, error) {
	var rows []struct {
		ID, SupplierID        int64
		Attempt               int
		AttemptOrganisationID *int64
	}
	if err := db.gorm.WithContext(ctx).Raw(`SELECT id, supplier_id, attempt, attempt_organisation_id FROM import_processes WHERE v2_status = 'IN_PROGRESS'`).
		Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("attempts in progress: %w", err)
	}
	held := make([]queue.Held, len(rows))
	for i, r := range rows {
		held[i] = queue.Held{Holder: queue.SlotHolder(r.ID, r.Attempt), Owner: queue.Owner{Supplier: r.SupplierID}}
		if r.AttemptOrganisationID != nil {
			held[i].Owner.Organisation = *r.AttemptOrganisationID
		}
	}
	return held, nil
}

// CountInProgress counts accounts being created now, each holding a slot
// under the cluster-wide cap (a metric and a test probe); scheduled ones
// still waiting for their window or a slot are not counted.
func (db *DB) CountInProgress(ctx context.Context) (int64, error) {
	var n int64
	if err := db.gorm.WithContext(ctx).Raw(`SELECT count(*) FROM import_processes WHERE v2_status = 'IN_PROGRESS'`).Scan(&n).Error; err != nil {
		return 0, fmt.Errorf("count in progress: %w", err)
	}
	return n, nil
}

// CountScheduledWaiting counts accounts scheduled and not started yet
// (v2 PENDING and scheduled: waiting for their window or a slot), a metric.
// By the v1/v2 status CHECK they are the v1 IN_PROGRESS ones still PENDING,
// which the partial index on IN_PROGRESS processes finds without a scan.
func (db *DB) CountScheduledWaiting(ctx context.Context) (int64, error) {
	var n int64
	err := db.gorm.WithContext(ctx).Raw(`SELECT count(*) FROM import_processes
		WHERE status = 'IN_PROGRESS' AND v2_status = 'PENDING' AND scheduled`).Scan(&n).Error
	if err != nil {
		return 0, fmt.Errorf("count scheduled waiting: %w", err)
	}
	return n, nil
}

// StillInProgress reports whether the process is still running this attempt
// (started: it holds a slot).
func (db *DB) StillInProgress(ctx context.Context, processID int64, attempt int) (bool, error) {
	var n int64
	err := db.gorm.WithContext(ctx).Raw(`SELECT count(*) FROM import_processes WHERE id = ? AND attempt = ? AND v2_status = 'IN_PROGRESS'`,
		processID, attempt).Scan(&n).Error
	if err != nil {
		return false, fmt.Errorf("process state: %w", err)
	}
	return n == 1, nil
}

// NotInProgress returns those of the slot owners whose attempt is not in
// progress (started and holding its slot) (or whose process does not exist): their slots are stale. An
// owner with attempt 0 stands for any attempt of its process.
func (db *DB) NotInProgress(ctx context.Context, owners []queue.SlotRef) ([]queue.SlotRef, error) {
	if len(owners) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(owners))
	attempts := make([]int64, len(owners))
	for i, o := range owners {
		ids[i], attempts[i] = o.ProcessID, int64(o.Attempt)
	}
	var rows []struct {
		ID      int64
		Attempt int
	}
	err := db.gorm.WithContext(ctx).Raw(`
		SELECT x.id, x.attempt FROM unnest(?::bigint[], ?::bigint[]) AS x(id, attempt)
		 WHERE NOT EXISTS (SELECT 1 FROM import_processes p
		                    WHERE p.id = x.id AND p.v2_status = 'IN_PROGRESS' AND (x.attempt = 0 OR p.attempt = x.attempt))`,
		pgIDs(ids), pgIDs(attempts)).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("processes not in progress: %w", err)
	}
	out := make([]queue.SlotRef, len(rows))
	for i, r := range rows {
		out[i] = queue.SlotRef{ProcessID: r.ID, Attempt: r.Attempt}
	}
	return out, nil
}

// pgIDs renders ids as a Postgres array literal for an ::bigint[] cast.
func pgIDs(ids []int64) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	b.WriteByte('}')
	return b.String()
}

// errorTextMax bounds each text of an attempt's error as stored.
const errorTextMax = 4000

// storableError is e with its texts cleaned by pkg/storable: an attempt's
// error may quote a vendor's or the platform's answer, and Postgres refuses
// a \u0000 in jsonb (the attempt would end unrecorded).
func storableError(e *dataimport.Error) *dataimport.Error {
	if e == nil {
		return nil
	}
	c := *e
	c.Code = storable.Text(c.Code, errorTextMax)
	c.Detail = storable.Text(c.Detail, errorTextMax)
	c.Domain = storable.Text(c.Domain, errorTextMax)
	if len(e.Errors) > 0 {
		c.Errors = make([]dataimport.FieldError, len(e.Errors))
		for i, f := range e.Errors {
			c.Errors[i] = dataimport.FieldError{Detail: storable.Text(f.Detail, errorTextMax),
				Code: storable.Text(f.Code, errorTextMax), Attr: storable.Text(f.Attr, errorTextMax)}
		}
	}
	return &c
}
