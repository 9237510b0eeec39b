package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Re-running a job's invalid and failed lines (CONTRACT §13). The corrected
// accounts of a request are received like an upload's lines (COPY in short
// transactions, no connection held while the partner sends) into
// import_job_corrections, then applied to the job in one transaction: each
// accepted correction moves its line back to pending with the new payload,
// its earlier outcome appended to the line's history, and the job's
// counters move in the same statement.

// JobCorrection is one valid corrected account of a re-run's body.
type JobCorrection struct {
	Line     int // the line of the re-run's body
	External string
	Payload  []byte
}

// ReceiveJobCorrections stores a re-run's valid lines under rerunID, in
// batches as ReceiveJob does, within the uploads' share of the pool. On
// an error the lines stored so far are deleted.
func (db *DB) ReceiveJobCorrections(ctx context.Context, jobID int64, rerunID string, feed func(emit func(JobCorrection) error) error) error {
	rows := make([][]any, 0, jobCopyBatch)
	bytes := 0
	flush := func() error {
		if len(rows) == 0 {
			return nil
		}
		err := db.inUploadTx(ctx, func(tx pgx.Tx) error {
			_, err := tx.CopyFrom(ctx, pgx.Identifier{"import_job_corrections"},
				[]string{"job_id", "rerun_id", "line", "external_account_number", "payload"}, pgx.CopyFromRows(rows))
			return err
		})
		if err != nil {
			return fmt.Errorf("receive job corrections: %w", err)
		}
		rows, bytes = rows[:0], 0
		return nil
	}
	err := feed(func(c JobCorrection) error {
		rows = append(rows, []any{jobID, rerunID, int64(c.Line), c.External, string(c.Payload)})
		bytes += len(c.Payload) + len(c.External) + 64
		if len(rows) >= jobCopyBatch || bytes >= jobCopyBytes {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		db.dropJobCorrections(context.WithoutCancel(ctx), jobID, rerunID)
		return err
	}
	return nil
}

func (db *DB) dropJobCorrections(ctx context.Context, jobID int64, rerunID string) {
	_, _ = db.sql.ExecContext(ctx, `DELETE FROM import_job_corrections WHERE job_id = $1 AND rerun_id = $2`, jobID, rerunID)
}

// RerunRefusal is a corrected line that changed nothing, and why.
type RerunRefusal struct {
	Line     int64  // the line of the re-run's body
	External string // its external_account_number
	Answer   string // one of dataimport.RerunAnswers, not accepted
	JobLine  *int64 // the job's line with that number, if any
	Outcome  string // that line's outcome
}

// JobRerun is what applying a re-run did.
type JobRerun struct {
	Job     JobView
	Counts  map[string]int64 // by dataimport.RerunAnswers (invalid lines are the caller's)
	Refused []RerunRefusal   // the first refused lines, in body order
	// Reopened: a COMPLETED job went back to PROCESSING; Epoch names its
	// wake-up task.
	Reopened bool
	Epoch    int
}

// classifyCorrections answers each corrected line of re-run $2 of job $1
// (supplier $3) with dataimport.RerunAnswer: against the job's latest line
// with its external number and the account's import process.
const classifyCorrections = `
	SELECT c.line, c.external_account_number AS ext, t.line AS jline, coalesce(t.outcome, '') AS joutcome, t.error_hash,
	       CASE WHEN c.line <> max(c.line) OVER (PARTITION BY c.external_account_number) THEN 'duplicate_line'
	            WHEN t.line IS NULL THEN 'not_in_job'
	            WHEN p.platform_account_number IS NOT NULL OR t.outcome IN ('created', 'already_imported') THEN 'already_imported'
	            WHEN NOT t.outcome = ANY($4::text[]) THEN 'not_retryable'
	            ELSE 'accepted' END AS answer
	  FROM import_job_corrections c
	  LEFT JOIN LATERAL (SELECT r.line, r.outcome, r.error_hash FROM import_job_records r
	                      WHERE r.job_id = c.job_id AND r.external_account_number = c.external_account_number
	                      ORDER BY r.line DESC LIMIT 1) t ON true
	  LEFT JOIN import_processes p ON p.supplier_id = $3 AND p.external_account_number = c.external_account_number
	 WHERE c.job_id = $1 AND c.rerun_id = $2`

// maxLineHistory is how many earlier outcomes a line keeps (the latest):
// a line sent again and again must not grow without bound.
const maxLineHistory = "20"

// applyCorrections moves the accepted lines back to pending with their
// corrected payload, keeps their earlier outcome in their history, and
// moves the job's counters, in one statement. A job that had completed
// goes back to PROCESSING with its next lease epoch (its wake-up task).
const applyCorrections = `
	WITH k AS (` + classifyCorrections + `
	), a AS (
		SELECT k.*, c.payload FROM k JOIN import_job_corrections c ON c.job_id = $1 AND c.rerun_id = $2 AND c.line = k.line
		 WHERE k.answer = 'accepted'
	), u AS (
		UPDATE import_job_records r
		   SET history = (SELECT jsonb_agg(h ORDER BY i) FROM (
		                     SELECT h, i FROM jsonb_array_elements(coalesce(r.history, '[]'::jsonb) || jsonb_build_array(jsonb_build_object(
		                         'outcome', r.outcome, 'at', r.modified_at,
		                         'error', coalesce(r.errors, (SELECT e.error FROM import_job_errors e WHERE e.job_id = r.job_id AND e.hash = r.error_hash)))))
		                       WITH ORDINALITY AS x(h, i) ORDER BY i DESC LIMIT ` + maxLineHistory + `) kept),
		       payload = a.payload, outcome = 'pending', errors = NULL, error_hash = NULL, staged_version = NULL,
		       process_id = NULL, attempt = NULL, platform_account_number = NULL, modified_at = now()
		  FROM a
		 WHERE r.job_id = $1 AND r.line = a.jline AND r.outcome = ANY($4::text[])
		RETURNING a.joutcome AS was, a.error_hash
	), shared AS (
		UPDATE import_job_errors e SET n = e.n - x.k
		  FROM (SELECT error_hash, count(*) AS k FROM u WHERE error_hash IS NOT NULL GROUP BY error_hash) x
		 WHERE e.job_id = $1 AND e.hash = x.error_hash
	)
	UPDATE import_jobs SET modified_at = now(), state = 'PROCESSING', finished_at = NULL,
	       lease_epoch = lease_epoch + CASE WHEN state = 'COMPLETED' THEN 1 ELSE 0 END,
	       n_pending = n_pending + (SELECT count(*) FROM u),
	       n_invalid = n_invalid - (SELECT count(*) FROM u WHERE was = 'invalid'),
	       n_failed = n_failed - (SELECT count(*) FROM u WHERE was = 'failed')
	 WHERE id = $1 AND EXISTS (SELECT 1 FROM u)
	RETURNING lease_epoch`

// ApplyJobCorrections applies re-run rerunID to the job, in one
// transaction that takes the job row before any line (as every writer of
// lines and counters does, FinishJobIfDone included, so a job cannot be
// completed over lines this moved back to pending). The corrections are
// deleted with it, and those of re-runs that died more than a day ago.
// A job neither PROCESSING nor COMPLETED refuses (dataimport.JobNotRerunnable).
func (db *DB) ApplyJobCorrections(ctx context.Context, orgID, jobID int64, rerunID string, maxRefused int) (JobRerun, error) {
	out := JobRerun{Counts: map[string]int64{}}
	err := db.inUploadTx(ctx, func(tx pgx.Tx) error {
		var state string
		var supplierID int64
		err := tx.QueryRow(ctx, `SELECT state, supplier_id FROM import_jobs WHERE id = $1 AND organisation_id = $2 FOR NO KEY UPDATE`,
			jobID, orgID).Scan(&state, &supplierID)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrJobNotFound
		}
		if err != nil {
			return err
		}
		if !dataimport.JobRerunnable(dataimport.JobState(state)) {
			return dataimport.JobNotRerunnable(dataimport.JobState(state))
		}
		args := []any{jobID, rerunID, supplierID, dataimport.RerunnableOutcomes}
		rows, err := tx.Query(ctx, `SELECT answer, count(*) FROM (`+classifyCorrections+`) k GROUP BY answer`, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var a string
			var n int64
			if err := rows.Scan(&a, &n); err != nil {
				rows.Close()
				return err
			}
			out.Counts[a] = n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT line, ext, answer, jline, joutcome FROM (`+classifyCorrections+`) k
			WHERE answer <> 'accepted' ORDER BY line LIMIT $5`, append(args, maxRefused)...)
		if err != nil {
			return err
		}
		out.Refused, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (RerunRefusal, error) {
			var f RerunRefusal
			return f, r.Scan(&f.Line, &f.External, &f.Answer, &f.JobLine, &f.Outcome)
		})
		if err != nil {
			return err
		}
		if out.Counts[dataimport.RerunAccepted] > 0 {
			err := tx.QueryRow(ctx, applyCorrections, args...).Scan(&out.Epoch)
			switch {
			case errors.Is(err, pgx.ErrNoRows): // no line moved after all
				out.Counts[dataimport.RerunAccepted] = 0
			case err != nil:
				return err
			default:
				out.Reopened = state == string(dataimport.JobCompleted)
			}
		}
		_, err = tx.Exec(ctx, `DELETE FROM import_job_corrections WHERE job_id = $1 AND (rerun_id = $2 OR created_at < now() - interval '1 day')`,
			jobID, rerunID)
		return err
	})
	if err != nil {
		db.dropJobCorrections(context.WithoutCancel(ctx), jobID, rerunID)
		if _, ok := dataimport.AsError(err); ok || errors.Is(err, ErrJobNotFound) {
			return out, err
		}
		return out, fmt.Errorf("apply job %d corrections: %w", jobID, err)
	}
	out.Job, err = db.job(ctx, orgID, jobID)
	return out, err
}

// lineHistory decodes a line's history column.
func lineHistory(s string) []dataimport.JobLineHistory {
	out := []dataimport.JobLineHistory{}
	if s == "" {
		return out
	}
	var raw []struct {
		Outcome string              `json:"outcome"`
		Error   *dataimport.Error   `json:"error"`
		At      dataimport.DateTime `json:"at"`
	}
	if json.Unmarshal([]byte(s), &raw) != nil {
		return out
	}
	for _, h := range raw {
		e := dataimport.JobLineHistory{Outcome: h.Outcome, At: h.At, Errors: []dataimport.FieldError{}}
		if h.Error != nil {
			e.Code, e.Detail = h.Error.Code, h.Error.Detail
			if len(h.Error.Errors) > 0 {
				e.Errors = h.Error.Errors
			}
		}
		out = append(out, e)
	}
	return out
}
