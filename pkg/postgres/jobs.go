package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

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
	IdempotencyKey string // empty: none
	Query          string // the request's query string, compared on a retry with the same key
}

const jobColumns = `j.id, j.organisation_id, j.supplier_id, s.code, j.operations_team_id, j.state, j.create_accounts, j.dry_run, j.window_start, j.window_end,
	j.error, j.body_bytes, j.n_received, j.n_pending, j.n_invalid, j.n_duplicate_line, j.n_staged, j.n_in_progress, j.n_created,
	j.n_already_imported, j.n_failed, j.n_cancelled, j.created_at, j.received_at, j.finished_at, j.modified_at, j.rate_samples::text`

type rowScanner interface{ Scan(dest ...any) error }

func scanJob(r rowScanner, rate *[]RateSample) (dataimport.Job, error) {
	var j dataimport.Job
	var errJSON []byte
	var samples string
	c := &j.Counters
	err := r.Scan(&j.ID, &j.OrganisationID, &j.SupplierID, &j.SupplierCode, &j.TeamID, &j.State, &j.Create, &j.DryRun, &j.WindowStart, &j.WindowEnd,
		&errJSON, &j.BodyBytes, &c.Received, &c.Pending, &c.Invalid, &c.DuplicateLine, &c.Staged, &c.InProgress, &c.Created,
		&c.AlreadyImported, &c.Failed, &c.Cancelled, &j.CreatedAt, &j.ReceivedAt, &j.FinishedAt, &j.ModifiedAt, &samples)
	if err != nil {
		return j, err
	}
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

// CreateJob inserts a job in RECEIVING. With an idempotency key that
// already names a job of the organisation, nothing is inserted and that job
// is returned instead (existing non-nil).
func (db *DB) CreateJob(ctx context.Context, in NewJob, staleAfter time.Duration) (dataimport.Job, *IdempotentJob, error) {
	var key any
	if in.IdempotencyKey != "" {
		key = in.IdempotencyKey
	}
	var id int64
	err := db.sql.QueryRowContext(ctx, `
		INSERT INTO import_jobs (organisation_id, supplier_id, operations_team_id, create_accounts, dry_run, idempotency_key, request_query,
		                         window_start, window_end)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
		ON CONFLICT (organisation_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
		RETURNING id`, in.OrganisationID, in.SupplierID, in.TeamID, in.Create, in.DryRun, key, in.Query,
		nullTime(in.Window.Start), nullTime(in.Window.End)).Scan(&id)
	if err == nil {
		j, err := db.job(ctx, in.OrganisationID, id)
		return j.Job, nil, err
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return dataimport.Job{}, nil, fmt.Errorf("create job: %w", err)
	}
	var ex IdempotentJob
	err = db.sql.QueryRowContext(ctx, `SELECT id, request_query, (state = 'RECEIVING' AND heartbeat_at < now() - $3::interval), body_sha256
		  FROM import_jobs WHERE organisation_id = $1 AND idempotency_key = $2`, in.OrganisationID, in.IdempotencyKey, staleAfter.String()).
		Scan(&id, &ex.Query, &ex.Stale, &ex.BodySHA256)
	if err != nil {
		return dataimport.Job{}, nil, fmt.Errorf("create job: existing job for the idempotency key: %w", err)
	}
	v, err := db.job(ctx, in.OrganisationID, id)
	if err != nil {
		return dataimport.Job{}, nil, err
	}
	ex.Job = v.Job
	return dataimport.Job{}, &ex, nil
}

// TakeOverJob lets a retried upload take over a job whose receiving request
// died: the heartbeat must still be stale, so two retries cannot both take
// it. The take-over starts the job's next receive epoch and deletes the
// lines the dead request committed, in one transaction; a batch of the dead
// request that commits later is refused (its epoch is no longer the job's).
// It returns the epoch the retry receives in.
func (db *DB) TakeOverJob(ctx context.Context, jobID int64, staleAfter time.Duration) (int, bool, error) {
	var epoch int
	err := db.sql.QueryRowContext(ctx, `
		WITH j AS (
			UPDATE import_jobs SET heartbeat_at = now(), modified_at = now(), n_received = 0, receive_epoch = receive_epoch + 1
			 WHERE id = $1 AND state = 'RECEIVING' AND heartbeat_at < now() - $2::interval
			RETURNING id, receive_epoch
		), gone AS (
			DELETE FROM import_job_records r USING j WHERE r.job_id = j.id
		)
		SELECT receive_epoch FROM j`, jobID, staleAfter.String()).Scan(&epoch)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("take over job %d: %w", jobID, err)
	}
	return epoch, true, nil
}

// duplicateBatch is how many duplicate lines are marked per round trip.
const duplicateBatch = 1000

// markDuplicateLines marks, in the transaction that ends the upload, every
// valid line that a later valid line with the same external number
// replaces: a duplicate_line (it is still staged, in order, so the history
// keeps both versions). It returns how many.
//
// The job's lines were written moments ago, so the table's statistics
// have never seen them: the planner takes the job for one row. Joined to
// the table in one UPDATE, that estimate chose a nested loop re-running
// the whole window for every line of the job (quadratic: a second 400,000
// line job on an analyzed table was still marking after 10 minutes). So
// the duplicates are read in one pass and each is marked through the
// primary key, plans that no estimate can turn quadratic.
func markDuplicateLines(ctx context.Context, tx pgx.Tx, jobID int64) (int64, error) {
	rows, err := tx.Query(ctx, `
		SELECT line, next FROM (
			SELECT line, lead(line) OVER (PARTITION BY external_account_number ORDER BY line) AS next
			  FROM import_job_records WHERE job_id = $1 AND outcome = 'pending') x
		 WHERE next IS NOT NULL`, jobID)
	if err != nil {
		return 0, fmt.Errorf("receive job: find duplicate lines: %w", err)
	}
	type dup struct{ line, next int64 }
	dups, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dup, error) {
		var d dup
		return d, r.Scan(&d.line, &d.next)
	})
	if err != nil {
		return 0, fmt.Errorf("receive job: find duplicate lines: %w", err)
	}
	marked := int64(len(dups))
	for len(dups) > 0 {
		chunk := dups[:min(len(dups), duplicateBatch)]
		b := &pgx.Batch{}
		for _, d := range chunk {
			b.Queue(`UPDATE import_job_records SET outcome = 'duplicate_line',
				errors = jsonb_build_object('code', 'duplicate_line', 'detail',
				         'Line ' || $3::bigint || ' has the same external_account_number and replaces this line''s staged version.', 'errors', '[]'::jsonb)
				WHERE job_id = $1 AND line = $2`, jobID, d.line, d.next)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return 0, fmt.Errorf("receive job: mark duplicate lines: %w", err)
		}
		dups = dups[len(chunk):]
	}
	return marked, nil
}

// JobLine is one line of an upload, validated: Payload is the normalised
// account to stage, or Err says why the line is invalid.
type JobLine struct {
	Line     int
	External string
	Payload  []byte
	Err      *dataimport.Error
}

// jobCopyBatch is how many lines go to Postgres per COPY, each COPY in a
// transaction of its own.
const jobCopyBatch = 2000

// ErrUploadTakenOver answers a receiving request whose job another request
// took over (or the reaper failed) while it was receiving.
var ErrUploadTakenOver = errors.New("receive job: the job is no longer receiving this upload (cancelled, or taken over by a retry)")

// ReceiveJob stores an upload's lines: feed calls emit for every line, in
// order, and the lines go to Postgres with COPY in batches (never the whole
// body in memory), each batch in a short transaction of its own that also
// beats the job's heartbeat and commits only while epoch is still the job's
// receive epoch. A transaction held open for the whole body (minutes, for a
// large one) would hold back the event relay and every row version written
// meanwhile. When feed returns nil, the last batch, the marking of later
// lines that repeat an earlier line's external number, the counters and
// the move to PROCESSING commit together: only then is the body durably
// received. Until then the lines belong to a RECEIVING job that no worker
// touches; if the request fails, FailJob, a retry's TakeOverJob or the
// reaper (FailLostUploads) deletes them.
func (db *DB) ReceiveJob(ctx context.Context, jobID int64, epoch int, bodyBytes func() int64, bodySHA256 func() []byte, feed func(emit func(JobLine) error) error) (dataimport.JobCounters, error) {
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return dataimport.JobCounters{}, fmt.Errorf("receive job: %w", err)
	}
	defer conn.Close()
	var counters dataimport.JobCounters
	// A heartbeat on another connection shows the upload is alive while the
	// body is slow to arrive (every batch beats it too).
	hbCtx, stopHB := context.WithCancel(ctx)
	hbDone := make(chan struct{})
	var received atomic.Int64
	go func() {
		defer close(hbDone)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-hbCtx.Done():
				return
			case <-t.C:
			}
			_, _ = db.sql.ExecContext(hbCtx, `UPDATE import_jobs SET heartbeat_at = clock_timestamp(), n_received = $3
				WHERE id = $1 AND state = 'RECEIVING' AND receive_epoch = $2`, jobID, epoch, received.Load())
		}
	}()
	defer func() { stopHB(); <-hbDone }()
	var txErr error
	err = conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		rows := make([][]any, 0, jobCopyBatch)
		// store writes the batch in tx, behind the epoch guard.
		store := func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `UPDATE import_jobs SET heartbeat_at = clock_timestamp(), n_received = $3
				WHERE id = $1 AND state = 'RECEIVING' AND receive_epoch = $2`, jobID, epoch, counters.Received)
			if err != nil {
				return fmt.Errorf("receive job: %w", err)
			}
			if tag.RowsAffected() != 1 {
				return ErrUploadTakenOver
			}
			if len(rows) > 0 {
				if _, err := tx.CopyFrom(ctx, pgx.Identifier{"import_job_records"},
					[]string{"job_id", "line", "external_account_number", "payload", "outcome", "errors"}, pgx.CopyFromRows(rows)); err != nil {
					return fmt.Errorf("receive job: store lines: %w", err)
				}
			}
			rows = rows[:0]
			return nil
		}
		flush := func() error {
			return pgx.BeginFunc(ctx, pc, store)
		}
		emit := func(l JobLine) error {
			var ext, payload, errs any
			if l.External != "" {
				ext = l.External
			}
			outcome := dataimport.OutcomePending
			if l.Err != nil {
				outcome = dataimport.OutcomeInvalid
				b, err := json.Marshal(l.Err)
				if err != nil {
					return fmt.Errorf("encode line error: %w", err)
				}
				errs = string(b)
				counters.Invalid++
			} else {
				payload = string(l.Payload)
				counters.Pending++
			}
			counters.Received++
			received.Store(counters.Received)
			rows = append(rows, []any{jobID, l.Line, ext, payload, outcome, errs})
			if len(rows) == jobCopyBatch {
				return flush()
			}
			return nil
		}
		if txErr = feed(emit); txErr != nil {
			return nil
		}
		txErr = pgx.BeginFunc(ctx, pc, func(tx pgx.Tx) error {
			if err := store(tx); err != nil {
				return err
			}
			dups, err := markDuplicateLines(ctx, tx, jobID)
			if err != nil {
				return err
			}
			counters.DuplicateLine = dups
			counters.Pending -= dups
			tag, err := tx.Exec(ctx, `UPDATE import_jobs SET state = 'PROCESSING', received_at = now(), modified_at = now(), heartbeat_at = now(),
				body_bytes = $3, n_received = $4, n_pending = $5, n_invalid = $6, n_duplicate_line = $7, body_sha256 = $8
				WHERE id = $1 AND state = 'RECEIVING' AND receive_epoch = $2`, jobID, epoch, bodyBytes(), counters.Received, counters.Pending,
				counters.Invalid, counters.DuplicateLine, bodySHA256())
			if err != nil {
				return fmt.Errorf("receive job: %w", err)
			}
			if tag.RowsAffected() != 1 {
				return ErrUploadTakenOver
			}
			return nil
		})
		return nil
	})
	if txErr != nil {
		return counters, txErr
	}
	if err != nil {
		return counters, fmt.Errorf("receive job: %w", err)
	}
	return counters, nil
}

// FailJob ends a job whose upload was refused as a whole (too large, not
// readable): the lines received so far are deleted with it, so none is kept.
func (db *DB) FailJob(ctx context.Context, jobID int64, e *dataimport.Error) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode job error: %w", err)
	}
	_, err = db.sql.ExecContext(ctx, `
		WITH j AS (
			UPDATE import_jobs SET state = 'FAILED', error = $2::jsonb, finished_at = now(), modified_at = now()
			 WHERE id = $1 AND state = 'RECEIVING' RETURNING id
		)
		DELETE FROM import_job_records r USING j WHERE r.job_id = j.id`, jobID, string(b))
	if err != nil {
		return fmt.Errorf("fail job %d: %w", jobID, err)
	}
	return nil
}

// FailLostUploads fails RECEIVING jobs whose upload stopped more than
// olderThan ago and was not retried, and deletes the lines they had
// received: a failed upload keeps none.
func (db *DB) FailLostUploads(ctx context.Context, olderThan time.Duration) (int64, error) {
	var n int64
	err := db.sql.QueryRowContext(ctx, `
		WITH j AS (
			UPDATE import_jobs SET state = 'FAILED', finished_at = now(), modified_at = now(),
			       error = jsonb_build_object('code', 'upload_lost', 'detail', 'The upload stopped before the whole body was received; nothing of it was kept. Upload it again.')
			 WHERE state = 'RECEIVING' AND heartbeat_at < now() - $1::interval RETURNING id
		), gone AS (
			DELETE FROM import_job_records r USING j WHERE r.job_id = j.id
		)
		SELECT count(*) FROM j`, olderThan.String()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("fail lost uploads: %w", err)
	}
	return n, nil
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
	q := `SELECT line, coalesce(external_account_number, ''), outcome, coalesce(platform_account_number, ''), coalesce(errors::text, '')
		FROM import_job_records WHERE job_id = $1
		 AND EXISTS (SELECT 1 FROM import_jobs j WHERE j.id = $1 AND j.state <> 'RECEIVING')`
	args := []any{jobID}
	if len(outcomes) > 0 {
		q += ` AND outcome = ANY($2)`
		args = append(args, outcomes)
	}
	rows, err := db.readSQL.QueryContext(ctx, q+` ORDER BY line`, args...)
	if err != nil {
		return fmt.Errorf("job results: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r dataimport.JobRecord
		var errs string
		if err := rows.Scan(&r.Line, &r.ExternalAccountNumber, &r.Outcome, &r.PlatformAccountNumber, &errs); err != nil {
			return fmt.Errorf("job results: %w", err)
		}
		r.Errors = []dataimport.FieldError{}
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

// jobGuard takes a share lock on the job inside tx and reports whether it
// is still PROCESSING: a cancel (which updates the row) waits for the
// transaction, and the transaction does nothing after a cancel.
func jobGuard(ctx context.Context, tx *sql.Tx, jobID int64) error {
	var state string
	err := tx.QueryRowContext(ctx, `SELECT state FROM import_jobs WHERE id = $1 FOR SHARE`, jobID).Scan(&state)
	if err != nil {
		return fmt.Errorf("job %d: %w", jobID, err)
	}
	if state != string(dataimport.JobProcessing) {
		return ErrJobNotProcessing
	}
	return nil
}

// counterSQL turns outcome deltas into "n_x = n_x + k" assignments; the
// column names come from the fixed list of outcomes, never from input.
func counterSQL(delta map[string]int64) string {
	var parts []string
	for _, o := range dataimport.JobOutcomes {
		if d := delta[o]; d != 0 {
			parts = append(parts, "n_"+o+" = n_"+o+" + "+strconv.FormatInt(d, 10))
		}
	}
	parts = append(parts, "modified_at = now()")
	return strings.Join(parts, ", ")
}

func moveCounters(ctx context.Context, tx *sql.Tx, jobID int64, delta map[string]int64) error {
	if _, err := tx.ExecContext(ctx, `UPDATE import_jobs SET `+counterSQL(delta)+` WHERE id = $1`, jobID); err != nil {
		return fmt.Errorf("job %d counters: %w", jobID, err)
	}
	return nil
}

type lineUpdate struct {
	line      int64
	outcome   string
	version   *int
	processID *int64
	platform  *string
	errJSON   *string
}

func applyLineUpdates(ctx context.Context, tx *sql.Tx, jobID int64, ups []lineUpdate) error {
	if len(ups) == 0 {
		return nil
	}
	lines := make([]int64, len(ups))
	outcomes := make([]string, len(ups))
	versions := make([]*int64, len(ups))
	pids := make([]*int64, len(ups))
	plats := make([]*string, len(ups))
	errs := make([]*string, len(ups))
	for i, u := range ups {
		lines[i], outcomes[i], pids[i], plats[i], errs[i] = u.line, u.outcome, u.processID, u.platform, u.errJSON
		if u.version != nil {
			v := int64(*u.version)
			versions[i] = &v
		}
	}
	_, err := tx.ExecContext(ctx, `
		UPDATE import_job_records r SET outcome = u.outcome, modified_at = now(),
		       staged_version = coalesce(u.version::integer, r.staged_version), process_id = coalesce(u.pid, r.process_id),
		       platform_account_number = coalesce(u.plat, r.platform_account_number), errors = coalesce(u.err::jsonb, r.errors)
		  FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::bigint[], $6::text[], $7::text[]) AS u(line, outcome, version, pid, plat, err)
		 WHERE r.job_id = $1 AND r.line = u.line`, jobID, lines, outcomes, versions, pids, plats, errs)
	if err != nil {
		return fmt.Errorf("job %d lines: %w", jobID, err)
	}
	return nil
}

func errorJSON(e *dataimport.Error) *string {
	b, err := json.Marshal(e)
	if err != nil {
		return nil
	}
	s := string(b)
	return &s
}

// StageJobChunk stages up to limit of the job's lines not staged yet, in
// line order, with the staging statement of the per-account path, and
// records each line's outcome in the same transaction: staged, or why not
// (already imported, skipped, in progress elsewhere). A round that Postgres
// refuses is retried line by line behind savepoints, so a bad line fails
// alone. It returns how many lines it handled (0: none left).
//
// after is the last line a previous chunk handled (0: from the start): the
// scan starts past it, so it never wades through the index entries of lines
// already done, however large the job.
func (db *DB) StageJobChunk(ctx context.Context, job dataimport.Job, after int64, limit int) (int, int64, error) {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return 0, 0, fmt.Errorf("stage job chunk: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := jobGuard(ctx, tx, job.ID); err != nil {
		return 0, 0, err
	}
	type line struct {
		line     int64
		external string
		payload  string
		outcome  string
	}
	rows, err := tx.QueryContext(ctx, `SELECT line, external_account_number, payload, outcome FROM import_job_records
		WHERE job_id = $1 AND line > $3 AND (outcome = 'pending' OR (outcome = 'duplicate_line' AND staged_version IS NULL))
		ORDER BY line LIMIT $2 FOR UPDATE`, job.ID, limit, after)
	if err != nil {
		return 0, 0, fmt.Errorf("stage job chunk: %w", err)
	}
	var todo []line
	for rows.Next() {
		var l line
		if err := rows.Scan(&l.line, &l.external, &l.payload, &l.outcome); err != nil {
			rows.Close()
			return 0, 0, fmt.Errorf("stage job chunk: %w", err)
		}
		todo = append(todo, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("stage job chunk: %w", err)
	}
	if len(todo) == 0 {
		return 0, after, nil
	}
	outs := make([]stageOutcome, len(todo))
	failed := make([]*dataimport.Error, len(todo))
	// One statement may touch an account once: repeats go to later rounds,
	// so versions keep the order of the lines.
	idx := make([]int, len(todo))
	for i := range idx {
		idx[i] = i
	}
	for len(idx) > 0 {
		seen := map[string]bool{}
		var now, later []int
		for _, i := range idx {
			if seen[todo[i].external] {
				later = append(later, i)
				continue
			}
			seen[todo[i].external] = true
			now = append(now, i)
		}
		if err := stageJobRound(ctx, tx, job.SupplierID, todo2rows(now, func(i int) stageRow {
			return stageRow{SupplierID: job.SupplierID, External: todo[i].external, Payload: []byte(todo[i].payload)}
		}), now, outs, failed); err != nil {
			return 0, 0, err
		}
		idx = later
	}
	// Why were the others refused?
	var refusedExt []string
	for i, o := range outs {
		if !o.Staged && failed[i] == nil {
			refusedExt = append(refusedExt, todo[i].external)
		}
	}
	procs := map[string]dataimport.ImportProcess{}
	if len(refusedExt) > 0 {
		prs, err := tx.QueryContext(ctx, `SELECT external_account_number, status, skipped, coalesce(platform_account_number, '')
			FROM import_processes WHERE supplier_id = $1 AND external_account_number = ANY($2)`, job.SupplierID, refusedExt)
		if err != nil {
			return 0, 0, fmt.Errorf("stage job chunk: %w", err)
		}
		for prs.Next() {
			var p dataimport.ImportProcess
			if err := prs.Scan(&p.ExternalAccountNumber, &p.Status, &p.Skipped, &p.PlatformAccountNumber); err != nil {
				prs.Close()
				return 0, 0, fmt.Errorf("stage job chunk: %w", err)
			}
			procs[p.ExternalAccountNumber] = p
		}
		prs.Close()
	}
	delta := map[string]int64{}
	ups := make([]lineUpdate, 0, len(todo))
	zero := 0
	for i, l := range todo {
		u := lineUpdate{line: l.line, outcome: l.outcome}
		switch {
		case failed[i] != nil:
			u.outcome, u.errJSON, u.version = dataimport.OutcomeFailed, errorJSON(failed[i]), &zero
		case outs[i].Staged:
			v, pid := outs[i].Version, outs[i].ProcessID
			u.version, u.processID = &v, &pid
			if l.outcome == dataimport.OutcomePending {
				u.outcome = dataimport.OutcomeStaged
			}
		default:
			p := procs[l.external]
			u.version = &zero
			if l.outcome == dataimport.OutcomePending {
				e, _ := dataimport.AsError(refusal(p))
				u.errJSON = errorJSON(e)
				u.outcome = dataimport.OutcomeFailed
				if p.Imported() {
					u.outcome = dataimport.OutcomeAlreadyImported
					pan := p.PlatformAccountNumber
					u.platform = &pan
				}
			}
		}
		if u.outcome != l.outcome {
			delta[l.outcome]--
			delta[u.outcome]++
		}
		ups = append(ups, u)
	}
	if err := applyLineUpdates(ctx, tx, job.ID, ups); err != nil {
		return 0, 0, err
	}
	if err := moveCounters(ctx, tx, job.ID, delta); err != nil {
		return 0, 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, 0, fmt.Errorf("stage job chunk: commit: %w", err)
	}
	return len(todo), int64(todo[len(todo)-1].line), nil
}

func todo2rows(idx []int, f func(int) stageRow) []stageRow {
	out := make([]stageRow, len(idx))
	for k, i := range idx {
		out[k] = f(i)
	}
	return out
}

// stageJobRound stages distinct accounts in one statement behind a
// savepoint; if Postgres refuses it, each row is staged alone behind its
// own savepoint and a row refused alone is marked failed.
func stageJobRound(ctx context.Context, tx *sql.Tx, supplierID int64, rows []stageRow, idx []int, outs []stageOutcome, failed []*dataimport.Error) error {
	try := func(rs []stageRow) ([]stageOutcome, error) {
		if _, err := tx.ExecContext(ctx, `SAVEPOINT stage_round`); err != nil {
			return nil, fmt.Errorf("stage job round: %w", err)
		}
		o, err := stageRowsOn(ctx, tx, rs, "job")
		if err != nil {
			if _, rbErr := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT stage_round`); rbErr != nil {
				return nil, fmt.Errorf("stage job round: %w", rbErr)
			}
			return nil, err
		}
		_, err = tx.ExecContext(ctx, `RELEASE SAVEPOINT stage_round`)
		return o, err
	}
	o, err := try(rows)
	if err == nil {
		for k, i := range idx {
			outs[i] = o[k]
		}
		return nil
	}
	if len(rows) == 1 {
		if e := DataRefused(err); e != nil {
			failed[idx[0]] = e
			return nil
		}
		return err
	}
	for k, i := range idx {
		if err := stageJobRound(ctx, tx, supplierID, rows[k:k+1], []int{i}, outs, failed); err != nil {
			return err
		}
	}
	return nil
}

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
	ids := make([]int64, len(cands))
	atts := make([]int64, len(cands))
	byID := make(map[int64]JobCandidate, len(cands))
	for i, c := range cands {
		ids[i], atts[i] = c.ProcessID, int64(c.Attempt)
		byID[c.ProcessID] = c
	}
	rows, err := tx.QueryContext(ctx, `
		WITH s AS (
			UPDATE import_processes p
			   SET status = 'IN_PROGRESS', v2_status = 'IN_PROGRESS', scheduled = true, window_start = NULL, window_end = NULL,
			       attempt = p.attempt + 1, dry_run = $3, operations_team_id = $4, modified_at = now()
			  FROM unnest($1::bigint[], $2::bigint[]) AS u(id, attempt)
			 WHERE p.id = u.id AND p.attempt = u.attempt AND p.status = 'UNKNOWN' AND NOT p.skipped AND p.staged_version > 0
			RETURNING p.id, p.attempt, p.dry_run
		), e AS (
			INSERT INTO import_process_events (process_id, event, data)
			SELECT s.id, ev.name, jsonb_build_object('attempt', s.attempt, 'dry_run', s.dry_run, 'api', 'job', 'job_id', $5::bigint)
			  FROM s, unnest(ARRAY[$6, $7]::text[]) WITH ORDINALITY AS ev(name, n) ORDER BY s.id, ev.n
		)
		SELECT id, attempt FROM s`, ids, atts, job.DryRun, job.TeamID, job.ID, dataimport.EventScheduled, dataimport.EventStarted)
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
		err := tx.QueryRowContext(ctx, `SELECT status, skipped, platform_account_number, external_account_number FROM import_processes WHERE id = $1`, id).
			Scan(&p.Status, &p.Skipped, &p.PlatformAccountNumber, &p.ExternalAccountNumber)
		if err != nil {
			return nil, fmt.Errorf("begin job attempts: %w", err)
		}
		dp := p.domain()
		if dp.Status == dataimport.StatusUnknown && !dp.Skipped {
			continue // the attempt moved on meanwhile: next round
		}
		e, _ := dataimport.AsError(refusal(dp))
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
// created again (the attempt guard makes a second run harmless).
func (db *DB) JobInFlight(ctx context.Context, jobID int64, limit int) ([]JobCandidate, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT r.line, r.process_id, r.attempt FROM import_job_records r
		JOIN import_processes p ON p.id = r.process_id AND p.attempt = r.attempt AND p.v2_status = 'IN_PROGRESS'
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
		if errors.Is(err, ErrJobNotProcessing) || ctx.Err() != nil {
			for i := range errs {
				errs[i] = err
			}
			return res, errs
		}
		batchFallbacks.Add(1)
	}
	for i, in := range ins {
		res[i], errs[i] = db.createJobAccountAlone(ctx, jobID, in, numbers[i])
		if errors.Is(errs[i], ErrJobNotProcessing) {
			for j := i + 1; j < len(ins); j++ {
				errs[j] = ErrJobNotProcessing
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
		SELECT rec.line, a.outcome, a.error, a.platform_account_number
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
		RETURNING rec.outcome
	), c AS (SELECT outcome, count(*) AS n FROM u GROUP BY outcome)
	UPDATE import_jobs SET modified_at = now(),
	       n_in_progress = n_in_progress - coalesce((SELECT sum(n) FROM c), 0),
	       n_created = n_created + coalesce((SELECT n FROM c WHERE outcome = 'created'), 0),
	       n_cancelled = n_cancelled + coalesce((SELECT n FROM c WHERE outcome = 'cancelled'), 0),
	       n_staged = n_staged + coalesce((SELECT n FROM c WHERE outcome = 'staged'), 0),
	       n_failed = n_failed + coalesce((SELECT n FROM c WHERE outcome = 'failed'), 0)
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

// FinishJobIfDone marks the job COMPLETED once no line is on its way.
func (db *DB) FinishJobIfDone(ctx context.Context, jobID int64) (bool, error) {
	res, err := db.sql.ExecContext(ctx, `UPDATE import_jobs j SET state = 'COMPLETED', finished_at = now(), modified_at = now(),
		lease_owner = NULL, lease_until = NULL
		WHERE id = $1 AND state = 'PROCESSING' AND NOT EXISTS (
			SELECT 1 FROM import_job_records r WHERE r.job_id = j.id
			   AND (r.outcome IN ('pending', 'in_progress') OR (r.outcome = 'duplicate_line' AND r.staged_version IS NULL)
			        OR (r.outcome = 'staged' AND j.create_accounts AND r.attempt IS NULL)))`, jobID)
	if err != nil {
		return false, fmt.Errorf("finish job %d: %w", jobID, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ClaimJob takes (or renews) the job's processing lease for owner; false
// when the job is not PROCESSING or another live worker holds it.
func (db *DB) ClaimJob(ctx context.Context, jobID int64, owner string, lease time.Duration) (dataimport.Job, bool, error) {
	var id int64
	err := db.sql.QueryRowContext(ctx, `UPDATE import_jobs SET lease_owner = $2, lease_until = now() + $3::interval
		WHERE id = $1 AND state = 'PROCESSING' AND (lease_owner IS NULL OR lease_owner = $2 OR lease_until < now())
		RETURNING id`, jobID, owner, lease.String()).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return dataimport.Job{}, false, nil
	}
	if err != nil {
		return dataimport.Job{}, false, fmt.Errorf("claim job %d: %w", jobID, err)
	}
	row := db.sql.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM import_jobs j JOIN import_suppliers s ON s.id = j.supplier_id WHERE j.id = $1`, jobID)
	j, err := scanJob(row, nil)
	if err != nil {
		return dataimport.Job{}, false, fmt.Errorf("claim job %d: %w", jobID, err)
	}
	return j, true, nil
}

// YieldJob gives the lease up so another task continues the job, and
// returns the epoch that names that task.
func (db *DB) YieldJob(ctx context.Context, jobID int64, owner string) (int, error) {
	var epoch int
	err := db.sql.QueryRowContext(ctx, `UPDATE import_jobs SET lease_owner = NULL, lease_until = NULL, lease_epoch = lease_epoch + 1
		WHERE id = $1 AND lease_owner = $2 RETURNING lease_epoch`, jobID, owner).Scan(&epoch)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("yield job %d: %w", jobID, err)
	}
	return epoch, nil
}

// JobToWake is a PROCESSING job no live worker holds, and the epoch that
// names its wake-up task.
type JobToWake struct {
	ID    int64
	Epoch int
}

// JobsToWake lists PROCESSING jobs nobody holds: never started (their task
// may be queued, or lost with Redis) or whose lease ran out (their worker
// died). A lapsed lease is cleared and the epoch bumped, so the new task
// has a new ID even though asynq may still hold the dead worker's.
func (db *DB) JobsToWake(ctx context.Context) ([]JobToWake, error) {
	// Only lapsed leases are written; jobs nobody holds are only read.
	rows, err := db.sql.QueryContext(ctx, `
		WITH lapsed AS (
			UPDATE import_jobs SET lease_epoch = lease_epoch + 1, lease_owner = NULL, lease_until = NULL
			 WHERE state = 'PROCESSING' AND lease_until < now()
			RETURNING id, lease_epoch
		)
		SELECT id, lease_epoch FROM lapsed
		UNION ALL
		SELECT id, lease_epoch FROM import_jobs WHERE state = 'PROCESSING' AND lease_until IS NULL`)
	if err != nil {
		return nil, fmt.Errorf("jobs to wake: %w", err)
	}
	defer rows.Close()
	var out []JobToWake
	for rows.Next() {
		var j JobToWake
		if err := rows.Scan(&j.ID, &j.Epoch); err != nil {
			return nil, fmt.Errorf("jobs to wake: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// SampleJobRate adds a (now, lines done) sample to the job's last minute.
func (db *DB) SampleJobRate(ctx context.Context, jobID int64) error {
	_, err := db.sql.ExecContext(ctx, `
		UPDATE import_jobs SET rate_samples = (
			SELECT coalesce(jsonb_agg(s ORDER BY (s->>'t')::float8), '[]'::jsonb) FROM (
				SELECT s FROM jsonb_array_elements(rate_samples) s WHERE (s->>'t')::float8 > extract(epoch FROM now()) - 62
				UNION ALL
				SELECT jsonb_build_object('t', extract(epoch FROM now()),
				       'd', n_received - n_pending - n_in_progress - CASE WHEN create_accounts AND NOT dry_run THEN n_staged ELSE 0 END)) x)
		 WHERE id = $1`, jobID)
	if err != nil {
		return fmt.Errorf("sample job %d rate: %w", jobID, err)
	}
	return nil
}

// ExpireJobLines fails the job's staged lines not started yet: their
// schedule window ended (e says so).
func (db *DB) ExpireJobLines(ctx context.Context, jobID int64, e *dataimport.Error) error {
	err := db.execJobLinesThenCounters(ctx, jobID, `
		WITH u AS (
			UPDATE import_job_records SET outcome = 'failed', errors = $2::jsonb, modified_at = now()
			 WHERE job_id = $1 AND outcome = 'staged' AND attempt IS NULL
			RETURNING 1
		)
		UPDATE import_jobs SET n_staged = n_staged - (SELECT count(*) FROM u), n_failed = n_failed + (SELECT count(*) FROM u), modified_at = now()
		 WHERE id = $1`, jobID, *errorJSON(e))
	if err != nil {
		return fmt.Errorf("expire job %d lines: %w", jobID, err)
	}
	return nil
}

// CancelJob cancels a RECEIVING or PROCESSING job of the organisation. It
// waits for creation batches under way (they hold a share lock on the job),
// so once it returns no account of the job is created any more: lines not
// started become cancelled, attempts started and not committed are cancelled
// (with their event, as a v2 cancel), and what was created stays. A
// finished job is returned as it is.
func (db *DB) CancelJob(ctx context.Context, orgID, jobID int64) (JobView, error) {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return JobView{}, fmt.Errorf("cancel job: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var state string
	err = tx.QueryRowContext(ctx, `SELECT state FROM import_jobs WHERE id = $1 AND organisation_id = $2 FOR UPDATE`, jobID, orgID).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return JobView{}, ErrJobNotFound
	}
	if err != nil {
		return JobView{}, fmt.Errorf("cancel job: %w", err)
	}
	if dataimport.JobState(state).Finished() {
		_ = tx.Rollback()
		return db.job(ctx, orgID, jobID)
	}
	if dataimport.JobState(state) == dataimport.JobReceiving {
		// Nothing of an upload still arriving is kept: its lines so far go
		// (the receiving request's next batch finds the job cancelled).
		if _, err := tx.ExecContext(ctx, `UPDATE import_jobs SET state = 'CANCELLED', finished_at = now(), modified_at = now() WHERE id = $1`, jobID); err != nil {
			return JobView{}, fmt.Errorf("cancel job: state: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM import_job_records WHERE job_id = $1`, jobID); err != nil {
			return JobView{}, fmt.Errorf("cancel job: lines: %w", err)
		}
		if err := tx.Commit(); err != nil {
			return JobView{}, fmt.Errorf("cancel job: commit: %w", err)
		}
		return db.job(ctx, orgID, jobID)
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
		return JobView{}, fmt.Errorf("cancel job: %w", err)
	}
	steps[3].args = []any{jobID, create}
	for _, s := range steps {
		if _, err := tx.ExecContext(ctx, s.sql, s.args...); err != nil {
			return JobView{}, fmt.Errorf("cancel job: %s: %w", s.what, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return JobView{}, fmt.Errorf("cancel job: commit: %w", err)
	}
	return db.job(ctx, orgID, jobID)
}

// JobProgress is one job as the operator console's overview shows it.
type JobProgress struct {
	ID          int64
	Supplier    string
	State       dataimport.JobState
	Done, Total int64
}

// ConsoleJobs lists every job receiving or processing, then those finished
// in the last 24 hours, newest first, at most limit (one indexed read each).
func (db *DB) ConsoleJobs(ctx context.Context, limit int) ([]JobProgress, error) {
	rows, err := db.readSQL.QueryContext(ctx, `
		SELECT j.id, s.code, j.state, j.n_received - j.n_pending - j.n_in_progress
		       - CASE WHEN j.create_accounts AND NOT j.dry_run THEN j.n_staged ELSE 0 END, j.n_received
		  FROM import_jobs j JOIN import_suppliers s ON s.id = j.supplier_id
		 WHERE j.state IN ('RECEIVING', 'PROCESSING') OR j.finished_at > now() - interval '24 hours'
		 ORDER BY j.state IN ('RECEIVING', 'PROCESSING') DESC, j.id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("console jobs: %w", err)
	}
	defer rows.Close()
	var out []JobProgress
	for rows.Next() {
		var p JobProgress
		if err := rows.Scan(&p.ID, &p.Supplier, &p.State, &p.Done, &p.Total); err != nil {
			return nil, fmt.Errorf("console jobs: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// JobGauges is what the worker's /metrics shows of bulk jobs: jobs by
// state, and the lines of the unfinished ones by outcome.
type JobGauges struct {
	Jobs  map[dataimport.JobState]int64
	Lines map[string]int64
}

// ReadJobGauges reads JobGauges: a count over the job rows and one sum over
// the unfinished ones (import_jobs_unfinished_idx), never over their lines.
func (db *DB) ReadJobGauges(ctx context.Context) (JobGauges, error) {
	g := JobGauges{Jobs: map[dataimport.JobState]int64{}, Lines: map[string]int64{}}
	rows, err := db.sql.QueryContext(ctx, `SELECT state, count(*) FROM import_jobs GROUP BY state`)
	if err != nil {
		return g, fmt.Errorf("job gauges: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			return g, fmt.Errorf("job gauges: %w", err)
		}
		g.Jobs[dataimport.JobState(s)] = n
	}
	if err := rows.Err(); err != nil {
		return g, fmt.Errorf("job gauges: %w", err)
	}
	var pending, invalid, dup, staged, inProgress, created, already, failed, cancelled int64
	if err := db.sql.QueryRowContext(ctx, `SELECT coalesce(sum(n_pending), 0), coalesce(sum(n_invalid), 0), coalesce(sum(n_duplicate_line), 0),
		coalesce(sum(n_staged), 0), coalesce(sum(n_in_progress), 0), coalesce(sum(n_created), 0), coalesce(sum(n_already_imported), 0),
		coalesce(sum(n_failed), 0), coalesce(sum(n_cancelled), 0)
		  FROM import_jobs WHERE state IN ('RECEIVING', 'PROCESSING')`).
		Scan(&pending, &invalid, &dup, &staged, &inProgress, &created, &already, &failed, &cancelled); err != nil {
		return g, fmt.Errorf("job gauges: %w", err)
	}
	g.Lines = map[string]int64{"pending": pending, "invalid": invalid, "duplicate_line": dup, "staged": staged,
		"in_progress": inProgress, "created": created, "already_imported": already, "failed": failed, "cancelled": cancelled}
	return g, nil
}

// ReceivingLines is how many lines each job still receiving has received
// so far (its upload's heartbeat keeps it within a second of the truth).
func (db *DB) ReceivingLines(ctx context.Context) (map[int64]int64, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT id, n_received FROM import_jobs WHERE state = 'RECEIVING'`)
	if err != nil {
		return nil, fmt.Errorf("receiving lines: %w", err)
	}
	defer rows.Close()
	out := map[int64]int64{}
	for rows.Next() {
		var id, n int64
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("receiving lines: %w", err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("receiving lines: %w", err)
	}
	return out, nil
}
