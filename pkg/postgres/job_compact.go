package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/shopspring/decimal"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Compaction of completed bulk jobs (migration 00031). A COMPLETED job's
// created, already-imported and superseded (duplicate, staged) lines drop
// their raw text, and the accounts it created drop every staged version,
// their figures kept first on the process for reconciliation. Everything
// an answer reads stays: a line's number, external and platform numbers,
// outcome, errors and history; the failure records; the job's counters
// and control totals; the accounts (landed_digest); events. Invalid and
// failed lines keep their text (re-run, drill-down).
//
// Each batch is one transaction that takes the job row first, as every
// writer of its lines does (a re-run, a retry, settling), and goes on only
// while the job is still COMPLETED: a re-run or retry that reopened it
// stops the compaction, which starts again once the job completes again.

// compactLines drops the text of the lines no answer reads once the job is
// complete. A duplicate line's goes only once staged (until then, its text
// is what gets staged).
const compactLines = `
	UPDATE import_job_records SET payload = NULL
	 WHERE job_id = $1 AND line > $2 AND line <= $3 AND payload IS NOT NULL
	   AND (outcome IN ('created', 'already_imported') OR (outcome = 'duplicate_line' AND staged_version IS NOT NULL))`

// JobsToCompact answers up to limit jobs COMPLETED at least after ago and
// not compacted since, oldest first.
func (db *DB) JobsToCompact(ctx context.Context, after time.Duration, limit int) ([]int64, error) {
	ids, err := queryIDs(ctx, db.sql, `SELECT id FROM import_jobs
		WHERE state = 'COMPLETED' AND NOT dry_run AND (compacted_at IS NULL OR compacted_at < finished_at)
		  AND finished_at <= now() - $1 * interval '1 microsecond'
		ORDER BY id LIMIT $2`, after.Microseconds(), limit)
	if err != nil {
		return nil, fmt.Errorf("jobs to compact: %w", err)
	}
	return ids, nil
}

// JobCompaction is what one batch did.
type JobCompaction struct {
	Next      int64 // the last line the batch looked at: the next batch starts after it
	Lines     int64 // lines whose text was dropped
	Processes int64 // accounts whose figures were kept and staged versions dropped
	Done      bool  // the job is compacted (compacted_at set)
	Stopped   bool  // the job is no longer COMPLETED (re-run, retry): nothing was done
}

// CompactJobBatch compacts the job's next limit lines after line after.
// The batch that finds no line after it marks the job compacted.
func (db *DB) CompactJobBatch(ctx context.Context, jobID, after int64, limit int) (JobCompaction, error) {
	out := JobCompaction{Next: after}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return out, fmt.Errorf("compact job %d: %w", jobID, err)
	}
	defer func() { _ = tx.Rollback() }()
	var state string
	var supplierID int64
	var dryRun bool
	err = tx.QueryRowContext(ctx, `SELECT state, supplier_id, dry_run FROM import_jobs WHERE id = $1 FOR NO KEY UPDATE`, jobID).
		Scan(&state, &supplierID, &dryRun)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && (state != string(dataimport.JobCompleted) || dryRun)) {
		out.Stopped = true
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("compact job %d: %w", jobID, err)
	}
	// The batch's lines, each created one with its account's process and,
	// while its figures are not kept yet, the staged version it was created
	// from.
	rows, err := tx.QueryContext(ctx, `SELECT r.line, p.id, p.staged_figures IS NOT NULL, v.payload::text
		  FROM (SELECT line, outcome, external_account_number, platform_account_number FROM import_job_records
		         WHERE job_id = $1 AND line > $2 ORDER BY line LIMIT $3) r
		  LEFT JOIN import_processes p ON r.outcome = 'created' AND p.supplier_id = $4
		        AND p.external_account_number = r.external_account_number AND p.platform_account_number = r.platform_account_number
		  LEFT JOIN import_process_versions v ON p.staged_figures IS NULL AND v.process_id = p.id AND v.version = p.staged_version
		 ORDER BY r.line`, jobID, after, limit, supplierID)
	if err != nil {
		return out, fmt.Errorf("compact job %d: %w", jobID, err)
	}
	var n int
	var drop, figIDs []int64
	var figs []string
	for rows.Next() {
		var line int64
		var processID sql.NullInt64
		var kept sql.NullBool
		var payload sql.NullString
		if err := rows.Scan(&line, &processID, &kept, &payload); err != nil {
			rows.Close()
			return out, fmt.Errorf("compact job %d: %w", jobID, err)
		}
		n++
		out.Next = line
		switch {
		case !processID.Valid:
		case kept.Bool:
			drop = append(drop, processID.Int64) // figures kept by an earlier pass; versions may remain
		case payload.Valid:
			f, err := keptFigures(payload.String)
			if err != nil {
				// Reconciliation reports this account's payload as it did;
				// its versions stay.
				slog.WarnContext(ctx, "compact job: staged payload unreadable, kept", "job_id", jobID, "line", line, "err", err.Error())
				continue
			}
			figIDs, figs = append(figIDs, processID.Int64), append(figs, f)
			drop = append(drop, processID.Int64)
		}
		// A created account without a staged version reconciles as missing
		// before and after: nothing to keep.
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("compact job %d: %w", jobID, err)
	}
	if n == 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE import_jobs SET compacted_at = now() WHERE id = $1`, jobID); err != nil {
			return out, fmt.Errorf("compact job %d: %w", jobID, err)
		}
		out.Done = true
		return out, commit(tx, jobID)
	}
	if len(figIDs) > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE import_processes p SET staged_figures = f.figures::jsonb
			FROM unnest($1::bigint[], $2::text[]) AS f(id, figures) WHERE p.id = f.id`, figIDs, figs); err != nil {
			return out, fmt.Errorf("compact job %d: keep figures: %w", jobID, err)
		}
	}
	if len(drop) > 0 {
		if _, err := tx.ExecContext(ctx, `DELETE FROM import_process_versions WHERE process_id = ANY($1::bigint[])`, drop); err != nil {
			return out, fmt.Errorf("compact job %d: staged versions: %w", jobID, err)
		}
	}
	out.Processes = int64(len(figIDs))
	res, err := tx.ExecContext(ctx, compactLines, jobID, after, out.Next)
	if err != nil {
		return out, fmt.Errorf("compact job %d: lines: %w", jobID, err)
	}
	out.Lines, _ = res.RowsAffected()
	return out, commit(tx, jobID)
}

func commit(tx *sql.Tx, jobID int64) error {
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("compact job %d: %w", jobID, err)
	}
	return nil
}

// keptFigures are the figures of a staged payload as reconciliation reads
// them (dataimport.StagedFigures), those other than 0 only, as decimal
// strings of coefficient and exponent ("15771e-2", "2"): exact, so the
// figures read back are the same numbers with the same scale.
func keptFigures(payload string) (string, error) {
	var a dataimport.Account
	if err := json.Unmarshal([]byte(payload), &a); err != nil {
		return "", err
	}
	out := map[string]string{}
	for k, v := range dataimport.StagedFigures(&a) {
		if !v.IsZero() {
			out[k] = v.Coefficient().String()
			if v.Exponent() != 0 {
				out[k] += fmt.Sprintf("e%d", v.Exponent())
			}
		}
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// figuresFromKept reads keptFigures back: every figure, 0 where not kept.
func figuresFromKept(kept string) (dataimport.AccountFigures, error) {
	var m map[string]string
	if err := json.Unmarshal([]byte(kept), &m); err != nil {
		return nil, fmt.Errorf("kept staged figures: %w", err)
	}
	f := dataimport.NewFigures()
	for k, s := range m {
		d, err := decimal.NewFromString(s)
		if err != nil {
			return nil, fmt.Errorf("kept staged figures: %s: %w", k, err)
		}
		f[k] = d
	}
	return f, nil
}
