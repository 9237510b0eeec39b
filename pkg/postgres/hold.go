package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// A Paused supplier holds its creations (CONTRACT §14). Postgres decides,
// not the control-plane cache: every statement that starts a creation (the
// v2 claim, a job's attempts, the creation transaction itself) takes a KEY
// SHARE lock on the supplier row and requires it Ongoing. A status change
// takes the row FOR UPDATE, so it waits for creation transactions under
// way (they finish) and none starts after it committed.

// ErrSupplierNotOngoing: the supplier was Paused or set Complete; nothing
// was started or created. The caller holds or ends the work.
var ErrSupplierNotOngoing = errors.New("supplier is not ongoing")

// supplierGuardSQL aborts the transaction (SQLSTATE DIA01) unless every
// supplier in $1 is Ongoing, and keeps them so until it ends.
const supplierGuardSQL = `SELECT dataimport_assert(count(*) = cardinality($1::bigint[]), 'supplier not ongoing') FROM (
		SELECT 1 FROM import_suppliers WHERE id = ANY($1::bigint[]) AND status = 'Ongoing' ORDER BY id FOR KEY SHARE) ongoing`

// supplierIDs lists the distinct suppliers of a creation batch.
func supplierIDs(ins []CreationInput) []int64 {
	var out []int64
	seen := map[int64]bool{}
	for _, in := range ins {
		if !seen[in.Supplier.ID] {
			seen[in.Supplier.ID] = true
			out = append(out, in.Supplier.ID)
		}
	}
	return out
}

// SupplierStatusOf reads a supplier's status from Postgres (never the
// cache): a bulk job looks before each round.
func (db *DB) SupplierStatusOf(ctx context.Context, supplierID int64) (dataimport.SupplierStatus, error) {
	var s string
	err := db.sql.QueryRowContext(ctx, `SELECT status FROM import_suppliers WHERE id = $1`, supplierID).Scan(&s)
	if err != nil {
		return "", fmt.Errorf("supplier %d status: %w", supplierID, err)
	}
	return dataimport.SupplierStatus(s), nil
}

// HoldAttempt holds an attempt that has not created its account while its
// supplier is Paused: v1 IN_PROGRESS, v2 PENDING (a v1 create gives back
// its slot and starts again like a scheduled one), with
// EVENT_ACCOUNT_IMPORT_PROCESS_HELD as its latest event (recorded once, not
// at every look). false: the attempt is no longer current.
func (db *DB) HoldAttempt(ctx context.Context, processID int64, attempt int) (bool, error) {
	held := false
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var cur []struct{ V2Status string }
		if err := tx.Raw(`SELECT v2_status FROM import_processes WHERE id = ? AND attempt = ? AND status = 'IN_PROGRESS'
			AND platform_account_number IS NULL FOR NO KEY UPDATE`, processID, attempt).Scan(&cur).Error; err != nil {
			return fmt.Errorf("hold attempt: %w", err)
		}
		if len(cur) == 0 {
			return nil
		}
		held = true
		if cur[0].V2Status == string(dataimport.V2InProgress) {
			if err := tx.Exec(`UPDATE import_processes SET v2_status = 'PENDING', scheduled = true, modified_at = now() WHERE id = ?`,
				processID).Error; err != nil {
				return fmt.Errorf("hold attempt: %w", err)
			}
		}
		var last []string
		if err := tx.Raw(`SELECT event FROM import_process_events WHERE process_id = ? ORDER BY id DESC LIMIT 1`, processID).
			Scan(&last).Error; err != nil {
			return fmt.Errorf("hold attempt: %w", err)
		}
		if len(last) == 1 && last[0] == dataimport.EventHeld {
			return nil
		}
		return recordEvent(tx, processID, dataimport.EventHeld, map[string]any{"attempt": attempt, "held": dataimport.HeldSupplierPaused})
	})
	return held, err
}

// EndOnComplete ends an attempt that has not created its account because
// its supplier's migration is Complete: v2 CANCELLED (v1 UNKNOWN), with
// latest_error import_supplier_migration_complete, its attempt row and
// event. An account inside its creation transaction finishes first (the
// row lock) and is then left alone.
func (db *DB) EndOnComplete(ctx context.Context, processID int64, attempt int, supplierCode string) error {
	e := storableError(dataimport.SupplierCompleteError(supplierCode))
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("end on complete: %w", err)
	}
	return db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var ended []int64
		if err := tx.Raw(`UPDATE import_processes
			   SET status = 'UNKNOWN', v2_status = 'CANCELLED', scheduled = false, dry_run = false, latest_error = ?::jsonb, modified_at = now()
			 WHERE id = ? AND attempt = ? AND status = 'IN_PROGRESS' AND platform_account_number IS NULL RETURNING id`,
			string(b), processID, attempt).Scan(&ended).Error; err != nil {
			return fmt.Errorf("end on complete: %w", err)
		}
		if len(ended) == 0 {
			return nil
		}
		if err := tx.Exec(`INSERT INTO import_attempts (process_id, attempt, outcome, error) VALUES (?, ?, 'CANCELLED', ?::jsonb)
			ON CONFLICT (process_id, attempt) DO NOTHING`, processID, attempt, string(b)).Error; err != nil {
			return fmt.Errorf("end on complete: %w", err)
		}
		return recordEvent(tx, processID, dataimport.EventCancelled, errorData(attempt, e))
	})
}

// ResumeHeldJobAttempts starts again those of a job's lines in flight that
// were held (PENDING after a pause stopped their batch), under the
// supplier guard: ErrSupplierNotOngoing while the supplier is not Ongoing.
func (db *DB) ResumeHeldJobAttempts(ctx context.Context, supplierID int64, cands []JobCandidate) error {
	ids := make([]int64, len(cands))
	atts := make([]int64, len(cands))
	for i, c := range cands {
		ids[i], atts[i] = c.ProcessID, int64(c.Attempt)
	}
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("resume held: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := supplierGuard(ctx, tx, supplierID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `
		WITH s AS (
			UPDATE import_processes p SET v2_status = 'IN_PROGRESS', modified_at = now()
			  FROM unnest($1::bigint[], $2::bigint[]) AS u(id, attempt)
			 WHERE p.id = u.id AND p.attempt = u.attempt AND p.v2_status = 'PENDING' AND p.scheduled
			RETURNING p.id, p.attempt
		)
		INSERT INTO import_process_events (process_id, event, data)
		SELECT id, $3, jsonb_build_object('attempt', attempt, 'resumed', true) FROM s ORDER BY id`,
		ids, atts, dataimport.EventStarted); err != nil {
		return fmt.Errorf("resume held: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("resume held: commit: %w", err)
	}
	return nil
}

// supplierGuard is supplierGuardSQL for one supplier in a database/sql
// transaction: ErrSupplierNotOngoing unless it is Ongoing.
func supplierGuard(ctx context.Context, tx *sql.Tx, supplierID int64) error {
	var status string
	err := tx.QueryRowContext(ctx, `SELECT status FROM import_suppliers WHERE id = $1 FOR KEY SHARE`, supplierID).Scan(&status)
	if err != nil {
		return fmt.Errorf("supplier %d: %w", supplierID, err)
	}
	if status != string(dataimport.SupplierOngoing) {
		return ErrSupplierNotOngoing
	}
	return nil
}

// endPendingOnComplete ends, in the transaction that sets the supplier
// Complete, every creation of it scheduled and not started (v2 PENDING,
// held v1 creates among them), whatever its window: CANCELLED with
// import_supplier_migration_complete, its attempt row and event. Attempts
// already started are ended by the worker that runs them (EndOnComplete).
func endPendingOnComplete(tx *gorm.DB, code string) error {
	e := storableError(dataimport.SupplierCompleteError(code))
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("end pending on complete: %w", err)
	}
	err = tx.Exec(`
		WITH c AS (
			UPDATE import_processes p
			   SET status = 'UNKNOWN', v2_status = 'CANCELLED', scheduled = false, dry_run = false, latest_error = ?::jsonb, modified_at = now()
			  FROM import_suppliers s
			 WHERE s.code = ? AND p.supplier_id = s.id AND p.status = 'IN_PROGRESS' AND p.v2_status = 'PENDING' AND p.scheduled
			   AND p.platform_account_number IS NULL
			RETURNING p.id, p.attempt
		), a AS (
			INSERT INTO import_attempts (process_id, attempt, outcome, error) SELECT id, attempt, 'CANCELLED', ?::jsonb FROM c
			ON CONFLICT (process_id, attempt) DO NOTHING
		)
		INSERT INTO import_process_events (process_id, event, data)
		SELECT id, ?, jsonb_build_object('attempt', attempt, 'error', ?::jsonb) FROM c ORDER BY id`,
		string(b), code, string(b), dataimport.EventCancelled, string(b)).Error
	if err != nil {
		return fmt.Errorf("end pending on complete: %w", err)
	}
	return nil
}
