package postgres

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/shopspring/decimal"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/storable"
)

// A job's upload: the job is created RECEIVING, its lines are COPYed in
// batches, and the upload ends by marking duplicate lines and moving the
// job to PROCESSING (or failing it).

// CreateJob inserts a job in RECEIVING. With an idempotency key that
// already names a job of the organisation, nothing is inserted and that job
// is returned instead (existing non-nil). A key older than in.KeyTTL names
// no job any more: it is taken off its old job (which stays) first.
func (db *DB) CreateJob(ctx context.Context, in NewJob, staleAfter time.Duration) (dataimport.Job, *IdempotentJob, error) {
	var key any
	if in.IdempotencyKey != "" {
		key = in.IdempotencyKey
	}
	if key != nil && in.KeyTTL > 0 {
		// The unique index holds one job per key: an expired key is
		// cleared so the insert below can take it.
		if _, err := db.sql.ExecContext(ctx, `UPDATE import_jobs SET idempotency_key = NULL, modified_at = now()
			WHERE organisation_id = $1 AND idempotency_key = $2 AND created_at < now() - $3::interval`,
			in.OrganisationID, in.IdempotencyKey, in.KeyTTL.String()); err != nil {
			return dataimport.Job{}, nil, fmt.Errorf("create job: expire idempotency key: %w", err)
		}
	}
	var declared *string
	if len(in.Declared) > 0 {
		b, err := json.Marshal(in.Declared)
		if err != nil {
			return dataimport.Job{}, nil, fmt.Errorf("create job: control totals: %w", err)
		}
		s := string(b)
		declared = &s
	}
	var id int64
	err := db.sql.QueryRowContext(ctx, `
		INSERT INTO import_jobs (organisation_id, supplier_id, operations_team_id, create_accounts, dry_run, idempotency_key, request_query,
		                         window_start, window_end, control_declared)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb)
		ON CONFLICT (organisation_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
		RETURNING id`, in.OrganisationID, in.SupplierID, in.TeamID, in.Create, in.DryRun, key, in.Query,
		nullTime(in.Window.Start), nullTime(in.Window.End), declared).Scan(&id)
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
// it; or a job that failed without keeping its body for a reason of the
// transport or the service (dataimport.ResumableJobFailure), which goes
// back to RECEIVING. The take-over starts the job's next receive epoch and
// deletes the lines the dead request committed, in one transaction; a
// batch (or a late FailJob) of the dead request is refused (its epoch is no
// longer the job's). It returns the epoch the retry receives in.
func (db *DB) TakeOverJob(ctx context.Context, jobID int64, staleAfter time.Duration) (int, bool, error) {
	var epoch int
	err := db.sql.QueryRowContext(ctx, `
		WITH j AS (
			UPDATE import_jobs SET state = 'RECEIVING', error = NULL, finished_at = NULL,
			       heartbeat_at = now(), modified_at = now(), n_received = 0, receive_epoch = receive_epoch + 1
			 WHERE id = $1 AND (state = 'RECEIVING' AND heartbeat_at < now() - $2::interval
			                    OR state = 'FAILED' AND error->>'code' = ANY($3))
			RETURNING id, receive_epoch
		), gone AS (
			DELETE FROM import_job_records r USING j WHERE r.job_id = j.id
		), gone_errors AS (
			DELETE FROM import_job_errors e USING j WHERE e.job_id = j.id
		)
		SELECT receive_epoch FROM j`, jobID, staleAfter.String(), dataimport.ResumableJobFailures).Scan(&epoch)
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
//
// It also returns the figures of the lines marked (control totals): a
// replaced line's account is not received twice.
func markDuplicateLines(ctx context.Context, tx pgx.Tx, jobID int64) (int64, dataimport.ControlFigures, error) {
	var less dataimport.ControlFigures
	rows, err := tx.Query(ctx, `
		SELECT line, next FROM (
			SELECT line, lead(line) OVER (PARTITION BY external_account_number ORDER BY line) AS next
			  FROM import_job_records WHERE job_id = $1 AND outcome = 'pending') x
		 WHERE next IS NOT NULL`, jobID)
	if err != nil {
		return 0, less, fmt.Errorf("receive job: find duplicate lines: %w", err)
	}
	dups, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (dup, error) {
		var d dup
		return d, r.Scan(&d.line, &d.next)
	})
	if err != nil {
		return 0, less, fmt.Errorf("receive job: find duplicate lines: %w", err)
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
		b.Queue(`SELECT coalesce(sum(transfer_balance), 0)::text, coalesce(sum(opening_transactions), 0)::text, coalesce(sum(meter_points), 0)
			FROM import_job_records WHERE job_id = $1 AND line = ANY($2::bigint[])`, jobID, dupLines(chunk)).QueryRow(func(r pgx.Row) error {
			var f dataimport.ControlFigures
			if err := r.Scan(&f.TransferBalance, &f.OpeningTransactions, &f.MeterPoints); err != nil {
				return err
			}
			f.Accounts = int64(len(chunk))
			less.Add(f)
			return nil
		})
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return 0, less, fmt.Errorf("receive job: mark duplicate lines: %w", err)
		}
		dups = dups[len(chunk):]
	}
	return marked, less, nil
}

type dup struct{ line, next int64 }

func dupLines(ds []dup) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = d.line
	}
	return out
}

// JobLine is one line of an upload, validated: Payload is the normalised
// account to stage, or Err says why the line is invalid (Payload then is
// the line as sent, if any, kept for operators to see).
type JobLine struct {
	Line     int
	External string
	Payload  []byte
	Err      *dataimport.Error
	// Figures are the valid line's account's control figures (nil: invalid).
	Figures *dataimport.ControlFigures
	// Control, when set, makes this the upload's control line: its totals
	// are the job's declared ones (over the query's), and it is no line of
	// the job's results.
	Control dataimport.ControlDeclared
}

// jobCopyBatch is how many lines go to Postgres per COPY, each COPY in a
// transaction of its own; jobCopyBytes bounds the bytes a batch holds in
// memory (a line may be megabytes), whichever comes first.
const (
	jobCopyBatch = 2000
	jobCopyBytes = 4 << 20
)

// invalidLineKept bounds the text an invalid line keeps of itself (an
// account is a few KB; an invalid line may be anything up to the line
// limit).
const invalidLineKept = 64 << 10

// ErrUploadTakenOver answers a receiving request whose job another request
// took over (or the reaper failed) while it was receiving.
var ErrUploadTakenOver = errors.New("receive job: the job is no longer receiving this upload (cancelled, or taken over by a retry)")

// StopReceiving, returned by ReceiveJob's feed, ends the upload early and
// fails the job with Err, keeping the lines received so far (the last
// batch included) for the job's report: their pending lines are cancelled.
// For bodies refused as a whole (nothing kept) use FailJob instead.
type StopReceiving struct{ Err *dataimport.Error }

func (s *StopReceiving) Error() string { return "receive job: stopped: " + s.Err.Code }

// ErrorHash names an invalid line's error within its job: the first 8
// bytes of the SHA-256 of the error's JSON.
func ErrorHash(errJSON []byte) int64 {
	sum := sha256.Sum256(errJSON)
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

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
//
// No connection is held while feed reads the network: a batch is gathered
// in memory (bounded by jobCopyBatch lines and jobCopyBytes) and only then
// is a connection taken for its COPY, and given back after. A partner who
// stops sending mid-body (or sends a byte a minute) used to hold a pooled
// connection for as long as it liked: a few such uploads left the API
// unable to answer status reads. Uploads also hold at most half the pool at
// once (DB.uploads), and the heartbeat beats only when bodyBytes grew since
// the last beat, so a stalled upload's job goes stale and is reaped.
//
// Invalid lines name their error by hash (ErrorHash); each batch adds its
// distinct errors to import_job_errors once, with their line counts.
func (db *DB) ReceiveJob(ctx context.Context, jobID int64, epoch int, bodyBytes func() int64, bodySHA256 func() []byte, feed func(emit func(JobLine) error) error) (dataimport.JobCounters, error) {
	var counters dataimport.JobCounters
	var figures dataimport.ControlFigures // the valid lines' control figures, summed as they arrive
	var received atomic.Int64
	hbCtx, stopHB := context.WithCancel(ctx)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		db.uploadHeartbeat(hbCtx, jobID, epoch, bodyBytes, &received)
	}()
	defer func() { stopHB(); <-hbDone }()

	b := &receiveBatch{jobID: jobID, epoch: epoch, rows: make([][]any, 0, jobCopyBatch), errs: map[int64]*batchError{}}
	var declared dataimport.ControlDeclared // from a control line
	emit := func(l JobLine) error {
		if l.Control != nil {
			declared = l.Control
			return nil
		}
		if err := b.add(l, &counters); err != nil {
			return err
		}
		if l.Figures != nil {
			figures.Add(*l.Figures)
		}
		received.Store(counters.Received)
		if len(b.rows) >= jobCopyBatch || b.bytes >= jobCopyBytes {
			return db.inUploadTx(ctx, func(tx pgx.Tx) error { return b.store(ctx, tx, counters.Received) })
		}
		return nil
	}
	if err := feed(emit); err != nil {
		var stop *StopReceiving
		if errors.As(err, &stop) {
			if serr := db.stopReceiving(ctx, b, &counters, bodyBytes(), stop.Err); serr != nil {
				return counters, serr
			}
		}
		return counters, err
	}
	err := db.inUploadTx(ctx, func(tx pgx.Tx) error {
		if err := b.store(ctx, tx, counters.Received); err != nil {
			return err
		}
		dups, less, err := markDuplicateLines(ctx, tx, jobID)
		if err != nil {
			return err
		}
		counters.DuplicateLine = dups
		counters.Pending -= dups
		got := figures
		got.TransferBalance = got.TransferBalance.Sub(less.TransferBalance)
		got.OpeningTransactions = got.OpeningTransactions.Sub(less.OpeningTransactions)
		got.MeterPoints -= less.MeterPoints
		var ctl *string
		if len(declared) > 0 {
			js, err := json.Marshal(declared)
			if err != nil {
				return fmt.Errorf("receive job: control line: %w", err)
			}
			s := string(js)
			ctl = &s
		}
		tag, err := tx.Exec(ctx, `UPDATE import_jobs SET state = 'PROCESSING', received_at = now(), modified_at = now(), heartbeat_at = now(),
			body_bytes = $3, n_received = $4, n_pending = $5, n_invalid = $6, n_duplicate_line = $7, body_sha256 = $8,
			received_transfer_balance = $9::numeric, received_opening_transactions = $10::numeric, received_meter_points = $11,
			control_declared = CASE WHEN $12::jsonb IS NULL THEN control_declared ELSE coalesce(control_declared, '{}') || $12::jsonb END
			WHERE id = $1 AND state = 'RECEIVING' AND receive_epoch = $2`, jobID, epoch, bodyBytes(), counters.Received, counters.Pending,
			counters.Invalid, counters.DuplicateLine, bodySHA256(), got.TransferBalance.String(), got.OpeningTransactions.String(), got.MeterPoints, ctl)
		if err != nil {
			return fmt.Errorf("receive job: %w", err)
		}
		if tag.RowsAffected() != 1 {
			return ErrUploadTakenOver
		}
		return nil
	})
	return counters, err
}

// stopReceiving stores the last batch and fails the job with e in one
// transaction, keeping its lines: pending ones are cancelled.
func (db *DB) stopReceiving(ctx context.Context, b *receiveBatch, counters *dataimport.JobCounters, bodyBytes int64, e *dataimport.Error) error {
	ej, err := json.Marshal(storableError(e))
	if err != nil {
		return fmt.Errorf("encode job error: %w", err)
	}
	return db.inUploadTx(ctx, func(tx pgx.Tx) error {
		if err := b.store(ctx, tx, counters.Received); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE import_job_records SET outcome = 'cancelled', modified_at = now()
			WHERE job_id = $1 AND outcome = 'pending'`, b.jobID); err != nil {
			return fmt.Errorf("receive job: cancel pending lines: %w", err)
		}
		tag, err := tx.Exec(ctx, `UPDATE import_jobs SET state = 'FAILED', error = $3::jsonb, received_at = now(), finished_at = now(), modified_at = now(),
			body_bytes = $4, n_received = $5, n_pending = 0, n_invalid = $6, n_cancelled = $7
			WHERE id = $1 AND state = 'RECEIVING' AND receive_epoch = $2`, b.jobID, b.epoch, string(ej), bodyBytes,
			counters.Received, counters.Invalid, counters.Pending)
		if err != nil {
			return fmt.Errorf("receive job: fail: %w", err)
		}
		if tag.RowsAffected() != 1 {
			return ErrUploadTakenOver
		}
		counters.Cancelled, counters.Pending = counters.Pending, 0
		return nil
	})
}

// inUploadTx runs fn in a transaction on a connection taken for it alone,
// within the uploads' half of the pool.
func (db *DB) inUploadTx(ctx context.Context, fn func(pgx.Tx) error) error {
	sem := db.uploads.Load()
	if err := sem.Acquire(ctx, 1); err != nil {
		return fmt.Errorf("receive job: wait for a connection: %w", err)
	}
	defer sem.Release(1)
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return fmt.Errorf("receive job: %w", err)
	}
	defer conn.Close()
	var txErr error
	if err := conn.Raw(func(dc any) error {
		txErr = pgx.BeginFunc(ctx, dc.(*stdlib.Conn).Conn(), fn)
		return nil
	}); err != nil {
		return fmt.Errorf("receive job: %w", err)
	}
	return txErr
}

// uploadHeartbeat beats the job's heartbeat every second while the body is
// arriving (each batch beats it too). It beats only when bodyBytes grew
// since the last beat: an upload that stopped sending must go stale, so a
// retry can take it over and the reaper can end it. A beat never waits for
// a connection: with the uploads' share of the pool busy, the batches are
// beating anyway.
func (db *DB) uploadHeartbeat(ctx context.Context, jobID int64, epoch int, bodyBytes func() int64, received *atomic.Int64) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	last := bodyBytes()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n := bodyBytes()
		if n == last {
			continue
		}
		last = n
		sem := db.uploads.Load()
		if !sem.TryAcquire(1) {
			continue
		}
		_, _ = db.sql.ExecContext(ctx, `UPDATE import_jobs SET heartbeat_at = clock_timestamp(), n_received = $3
			WHERE id = $1 AND state = 'RECEIVING' AND receive_epoch = $2`, jobID, epoch, received.Load())
		sem.Release(1)
	}
}

// receiveBatch is the lines of an upload gathered in memory for one COPY.
type receiveBatch struct {
	jobID int64
	epoch int
	rows  [][]any
	bytes int
	errs  map[int64]*batchError // this batch's distinct line errors
	fails invalidLines          // this batch's invalid lines, for their failure records
}

// invalidLines are a batch's invalid lines as parallel arrays (one
// statement records them all).
type invalidLines struct {
	ext, err []string
	line     []int64
}

type batchError struct {
	json string
	n    int64
}

// add appends l to the batch and counts it.
func (b *receiveBatch) add(l JobLine, counters *dataimport.JobCounters) error {
	var ext, payload, hash, balance, txs, mps any
	if l.External != "" {
		ext = l.External
	}
	outcome := dataimport.OutcomePending
	if l.Err != nil {
		outcome = dataimport.OutcomeInvalid
		ej, err := json.Marshal(storableError(l.Err))
		if err != nil {
			return fmt.Errorf("encode line error: %w", err)
		}
		h := ErrorHash(ej)
		if e := b.errs[h]; e != nil {
			e.n++
		} else {
			b.errs[h] = &batchError{json: string(ej), n: 1}
			b.bytes += len(ej)
		}
		hash = h
		if len(l.Payload) > 0 {
			// Kept for the console's drill-down: the line as sent, cleaned
			// (it may hold anything) and bounded.
			p := storable.Bytes(l.Payload, invalidLineKept)
			payload = p
			b.bytes += len(p)
		}
		b.fails.ext = append(b.fails.ext, storable.Text(l.External, failureExternalMax))
		b.fails.err = append(b.fails.err, b.errs[h].json)
		b.fails.line = append(b.fails.line, int64(l.Line))
		counters.Invalid++
	} else {
		payload = string(l.Payload)
		if f := l.Figures; f != nil {
			balance, txs, mps = copyNumeric(f.TransferBalance), copyNumeric(f.OpeningTransactions), int32(f.MeterPoints)
		}
		b.bytes += len(l.Payload)
		counters.Pending++
	}
	b.bytes += len(l.External) + 64
	counters.Received++
	b.rows = append(b.rows, []any{b.jobID, l.Line, ext, payload, outcome, hash, balance, txs, mps})
	return nil
}

// copyNumeric is d as COPY writes a numeric column.
func copyNumeric(d decimal.Decimal) pgtype.Numeric {
	return pgtype.Numeric{Int: d.Coefficient(), Exp: d.Exponent(), Valid: true}
}

// store writes the batch in tx, behind the epoch guard, and empties it.
func (b *receiveBatch) store(ctx context.Context, tx pgx.Tx, received int64) error {
	tag, err := tx.Exec(ctx, `UPDATE import_jobs SET heartbeat_at = clock_timestamp(), n_received = $3
		WHERE id = $1 AND state = 'RECEIVING' AND receive_epoch = $2`, b.jobID, b.epoch, received)
	if err != nil {
		return fmt.Errorf("receive job: %w", err)
	}
	if tag.RowsAffected() != 1 {
		return ErrUploadTakenOver
	}
	if len(b.errs) > 0 {
		hashes, jsons, ns := make([]int64, 0, len(b.errs)), make([]string, 0, len(b.errs)), make([]int64, 0, len(b.errs))
		for h, e := range b.errs {
			hashes, jsons, ns = append(hashes, h), append(jsons, e.json), append(ns, e.n)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO import_job_errors (job_id, hash, error, n)
			SELECT $1, h, e::jsonb, n FROM unnest($2::bigint[], $3::text[], $4::bigint[]) AS u(h, e, n)
			ON CONFLICT (job_id, hash) DO UPDATE SET n = import_job_errors.n + excluded.n`, b.jobID, hashes, jsons, ns); err != nil {
			return fmt.Errorf("receive job: store line errors: %w", err)
		}
	}
	if len(b.fails.line) > 0 {
		// One statement per batch, and none for a batch without invalid lines.
		if _, err := tx.Exec(ctx, upsertJobLineFailures, b.jobID, b.fails.ext, b.fails.err, b.fails.line); err != nil {
			return fmt.Errorf("receive job: record invalid lines: %w", err)
		}
	}
	if len(b.rows) > 0 {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"import_job_records"},
			[]string{"job_id", "line", "external_account_number", "payload", "outcome", "error_hash", "transfer_balance", "opening_transactions", "meter_points"},
			pgx.CopyFromRows(b.rows)); err != nil {
			return fmt.Errorf("receive job: store lines: %w", err)
		}
	}
	b.rows, b.bytes = b.rows[:0], 0
	b.fails = invalidLines{ext: b.fails.ext[:0], err: b.fails.err[:0], line: b.fails.line[:0]}
	clear(b.errs)
	return nil
}

// FailJob ends a job whose upload was refused as a whole (too large, not
// readable) or lost: the lines received so far are deleted with it, so none
// is kept. Only while epoch is still the job's receive epoch: the late
// failure of an upload a retry took over leaves the retry's upload alone.
func (db *DB) FailJob(ctx context.Context, jobID int64, epoch int, e *dataimport.Error) error {
	b, err := json.Marshal(storableError(e))
	if err != nil {
		return fmt.Errorf("encode job error: %w", err)
	}
	_, err = db.sql.ExecContext(ctx, `
		WITH j AS (
			UPDATE import_jobs SET state = 'FAILED', error = $2::jsonb, finished_at = now(), modified_at = now()
			 WHERE id = $1 AND state = 'RECEIVING' AND receive_epoch = $3 RETURNING id
		), gone_errors AS (
			DELETE FROM import_job_errors e USING j WHERE e.job_id = j.id
		)
		DELETE FROM import_job_records r USING j WHERE r.job_id = j.id`, jobID, string(b), epoch)
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
		), gone_errors AS (
			DELETE FROM import_job_errors e USING j WHERE e.job_id = j.id
		)
		SELECT count(*) FROM j`, olderThan.String()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("fail lost uploads: %w", err)
	}
	return n, nil
}
