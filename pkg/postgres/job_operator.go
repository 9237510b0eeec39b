package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Jobs as operators see them (importctl job, the console): any
// organisation's, read and acted on through the partners' store methods,
// every action audited.

// OperatorJob reads one job, whatever its organisation.
func (db *DB) OperatorJob(ctx context.Context, jobID int64) (JobView, error) {
	var v JobView
	row := db.sql.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM import_jobs j JOIN import_suppliers s ON s.id = j.supplier_id WHERE j.id = $1`, jobID)
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

// OperatorJobs lists jobs of every organisation (of one supplier when
// supplierID is not 0, in one state when state is not empty), newest
// first, up to limit.
func (db *DB) OperatorJobs(ctx context.Context, supplierID int64, state dataimport.JobState, limit int) ([]JobView, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT `+jobColumns+` FROM import_jobs j JOIN import_suppliers s ON s.id = j.supplier_id
		WHERE ($1::bigint = 0 OR j.supplier_id = $1) AND ($2::text = '' OR j.state = $2) ORDER BY j.id DESC LIMIT $3`, supplierID, string(state), limit)
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	defer rows.Close()
	out := []JobView{}
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

// OperatorCancelJob cancels any organisation's job, as CancelJob does, with
// an audit row in the cancel's transaction. A finished job has nothing to
// cancel: dataimport.CodeJobNotCancellable, with the job, and no row.
func (db *DB) OperatorCancelJob(ctx context.Context, jobID int64) (JobView, error) {
	changed := false
	err := db.cancelJob(ctx, 0, jobID, func(tx *sql.Tx, was string) error {
		changed = true
		return auditSQL(ctx, tx, AuditJobCancel, fmt.Sprintf("job:%d", jobID), map[string]any{"state": was}, map[string]any{"state": dataimport.JobCancelled})
	})
	if err != nil {
		return JobView{}, err
	}
	v, err := db.OperatorJob(ctx, jobID)
	if err == nil && !changed {
		return v, dataimport.Errorf(dataimport.CodeJobNotCancellable, "job %d is %s: nothing to cancel", jobID, v.State)
	}
	return v, err
}

// Unskip undoes an operator's skip (MarkSkipped): partners may stage and
// create the account again. An account not marked skipped is
// dataimport.CodeAccountNotSkipped, with nothing audited.
func (db *DB) Unskip(ctx context.Context, supplierCode, external string) error {
	s, err := db.SupplierByCode(ctx, supplierCode)
	if err != nil {
		return err
	}
	target := "account:" + supplierCode + "/" + external
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("unskip %s: %w", target, err)
	}
	defer func() { _ = tx.Rollback() }()
	var status string
	err = tx.QueryRowContext(ctx, `UPDATE import_processes SET skipped = false, modified_at = now()
		WHERE supplier_id = $1 AND external_account_number = $2 AND skipped RETURNING status`, s.ID, external).Scan(&status)
	if errors.Is(err, sql.ErrNoRows) {
		return dataimport.Errorf(dataimport.CodeAccountNotSkipped, "account %s/%s is not marked skipped", supplierCode, external)
	}
	if err != nil {
		return fmt.Errorf("unskip %s: %w", target, err)
	}
	if err := auditSQL(ctx, tx, AuditAccountUnskip, target, map[string]any{"status": status, "skipped": true}, map[string]any{"skipped": false}); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("unskip %s: commit: %w", target, err)
	}
	return nil
}
