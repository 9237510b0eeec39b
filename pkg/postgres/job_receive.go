package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// A job's upload: the job is created RECEIVING, its lines are COPYed in
// batches, and the upload ends by marking duplicate lines and moving the
// job to PROCESSING (or failing it).

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
				b, err := json.Marshal(storableError(l.Err))
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
	b, err := json.Marshal(storableError(e))
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
