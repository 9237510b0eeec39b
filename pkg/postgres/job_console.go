package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Reads of jobs for the operator console and the worker's metrics.

// JobProgress is one job as the operator console's overview shows it.
type JobProgress struct {
	ID          int64
	Supplier    string
	State       dataimport.JobState
	Done, Total int64
	// Reconciliation of its control totals (match, mismatch, none), and the
	// totals that do not match: a mismatch is never silent (CONTRACT §14).
	Reconciliation string
	Mismatched     []string
	CompactedAt    *time.Time // see dataimport.Job
}

// ConsoleJobs lists every job receiving or processing, then those finished
// in the last 24 hours, newest first, at most limit (one indexed read each).
func (db *DB) ConsoleJobs(ctx context.Context, limit int) ([]JobProgress, error) {
	rows, err := db.readSQL.QueryContext(ctx, `SELECT `+jobColumns+`
		  FROM import_jobs j JOIN import_suppliers s ON s.id = j.supplier_id
		 WHERE j.state IN ('RECEIVING', 'PROCESSING') OR j.finished_at > now() - interval '24 hours'
		 ORDER BY j.state IN ('RECEIVING', 'PROCESSING') DESC, j.id DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("console jobs: %w", err)
	}
	defer rows.Close()
	var out []JobProgress
	for rows.Next() {
		j, err := scanJob(rows, nil)
		if err != nil {
			return nil, fmt.Errorf("console jobs: %w", err)
		}
		c := j.Counters
		p := JobProgress{ID: j.ID, Supplier: j.SupplierCode, State: j.State, Total: c.Received, Done: c.Received - c.Pending - c.InProgress,
			CompactedAt: j.CompactedAt}
		if j.Create && !j.DryRun {
			p.Done -= c.Staged // still to create
		}
		var totals []dataimport.ControlTotal
		totals, p.Reconciliation = j.Totals()
		for _, t := range totals {
			if t.Result == dataimport.ReconciliationMismatch {
				p.Mismatched = append(p.Mismatched, t.Name)
			}
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
