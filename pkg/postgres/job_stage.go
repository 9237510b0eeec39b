package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Staging a job's lines in rounds, and the helpers every later step uses to
// move a line's outcome and the job's counters together.

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
	b, err := json.Marshal(storableError(e))
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
		outcome  string
	}
	rows, err := tx.QueryContext(ctx, `SELECT line, external_account_number, outcome FROM import_job_records
		WHERE job_id = $1 AND line > $3 AND (outcome = 'pending' OR (outcome = 'duplicate_line' AND staged_version IS NULL))
		ORDER BY line LIMIT $2 FOR UPDATE`, job.ID, limit, after)
	if err != nil {
		return 0, 0, fmt.Errorf("stage job chunk: %w", err)
	}
	var todo []line
	for rows.Next() {
		var l line
		if err := rows.Scan(&l.line, &l.external, &l.outcome); err != nil {
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
		if err := stageJobRound(ctx, tx, job.ID, todo2rows(now, func(i int) stageRow {
			return stageRow{SupplierID: job.SupplierID, External: todo[i].external, Line: todo[i].line}
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
	var refused invalidLines
	for i, e := range failed {
		if j := errorJSON(e); e != nil && j != nil {
			refused.ext, refused.err, refused.line = append(refused.ext, todo[i].external), append(refused.err, *j), append(refused.line, todo[i].line)
		}
	}
	if len(refused.line) > 0 {
		if _, err := tx.ExecContext(ctx, upsertJobLineFailures, job.ID, refused.ext, refused.err, refused.line); err != nil {
			return 0, 0, fmt.Errorf("stage job chunk: record refused lines: %w", err)
		}
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
func stageJobRound(ctx context.Context, tx *sql.Tx, jobID int64, rows []stageRow, idx []int, outs []stageOutcome, failed []*dataimport.Error) error {
	try := func(rs []stageRow) ([]stageOutcome, error) {
		if _, err := tx.ExecContext(ctx, `SAVEPOINT stage_round`); err != nil {
			return nil, fmt.Errorf("stage job round: %w", err)
		}
		o, err := stageRowsOn(ctx, tx, rs, "job", jobID)
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
		if err := stageJobRound(ctx, tx, jobID, rows[k:k+1], []int{i}, outs, failed); err != nil {
			return err
		}
	}
	return nil
}
