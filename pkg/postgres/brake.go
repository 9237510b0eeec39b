package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// The error-rate brake (CONTRACT §14): a supplier whose recent creations
// fail too often is paused by `system`, audited, and its partners are told.

// AuditSupplierBrake: an operator set or removed a supplier's brake.
const AuditSupplierBrake = "supplier.brake"

// SetSupplierBrake sets (nil: removes) a supplier's error-rate brake.
func (db *DB) SetSupplierBrake(ctx context.Context, code string, b *dataimport.Brake) (dataimport.Supplier, error) {
	defer db.control.invalidate()
	if b != nil {
		if err := b.Validate(); err != nil {
			return dataimport.Supplier{}, dataimport.Errorf(dataimport.CodeInvalid, "brake: %s", err.Error())
		}
	}
	err := db.audited(ctx, AuditSupplierBrake, func(tx *gorm.DB) (string, any, any, error) {
		var before []supplierRow
		if err := tx.Raw(`SELECT * FROM import_suppliers WHERE code = ? FOR UPDATE`, code).Scan(&before).Error; err != nil {
			return "", nil, nil, err
		}
		if len(before) == 0 {
			return "", nil, nil, dataimport.ErrSupplierNotFound(code)
		}
		var bp, window any
		if b != nil {
			bp, window = b.FailureBP, b.Window
		}
		if err := tx.Exec(`UPDATE import_suppliers SET brake_failure_bp = ?, brake_window = ?, updated_at = now() WHERE code = ?`,
			bp, window, code).Error; err != nil {
			return "", nil, nil, err
		}
		return "supplier:" + code, brakeAudit(before[0].domain().Brake), brakeAudit(b), nil
	})
	if err != nil {
		if _, ok := dataimport.AsError(err); ok {
			return dataimport.Supplier{}, err
		}
		return dataimport.Supplier{}, fmt.Errorf("set supplier %q brake: %w", code, err)
	}
	return db.SupplierByCode(ctx, code)
}

func brakeAudit(b *dataimport.Brake) map[string]any {
	if b == nil {
		return map[string]any{"brake": "off"}
	}
	return map[string]any{"failure_rate": b.Rate(), "window": b.Window}
}

// BrakeTripped is what CheckBrake did when the brake paused the supplier.
type BrakeTripped struct {
	Supplier string
	Brake    dataimport.Brake
	Trip     dataimport.BrakeTrip
	Reason   string
}

// CheckBrake measures the supplier's last creation outcomes against its
// brake and, when they trip it, pauses the supplier as `system` with the
// measured rate and top failure codes as the reason, audited, in one
// transaction with the partner event. ok=false: no brake, not Ongoing, or
// not tripped.
func (db *DB) CheckBrake(ctx context.Context, supplierID int64) (BrakeTripped, bool, error) {
	var sup []supplierRow
	if err := db.gorm.WithContext(ctx).Raw(`SELECT * FROM import_suppliers WHERE id = ?`, supplierID).Scan(&sup).Error; err != nil {
		return BrakeTripped{}, false, fmt.Errorf("check brake: %w", err)
	}
	if len(sup) == 0 {
		return BrakeTripped{}, false, nil
	}
	s := sup[0].domain()
	if s.Brake == nil || s.Status != dataimport.SupplierOngoing {
		return BrakeTripped{}, false, nil
	}
	last, err := db.lastCreationOutcomes(ctx, supplierID, s.Brake.Window)
	if err != nil {
		return BrakeTripped{}, false, err
	}
	trip, tripped := s.Brake.Trips(last)
	if !tripped {
		return BrakeTripped{}, false, nil
	}
	out := BrakeTripped{Supplier: s.Code, Brake: *s.Brake, Trip: trip, Reason: trip.Reason(*s.Brake)}
	paused, err := db.pauseByBrake(ctx, s.Code, out)
	if err != nil || !paused {
		return BrakeTripped{}, false, err
	}
	return out, true, nil
}

// lastCreationOutcomes reads the supplier's newest creation outcomes (a
// created account or a failed attempt; dry runs and cancels are not
// creations), newest first.
func (db *DB) lastCreationOutcomes(ctx context.Context, supplierID int64, n int) ([]dataimport.CreationOutcome, error) {
	rows, err := db.sql.QueryContext(ctx, `
		SELECT a.outcome = 'FAILED', coalesce(a.error->>'code', '')
		  FROM import_attempts a JOIN import_processes p ON p.id = a.process_id
		 WHERE p.supplier_id = $1 AND a.outcome IN ('COMPLETED', 'FAILED')
		 ORDER BY a.finished_at DESC LIMIT $2`, supplierID, n)
	if err != nil {
		return nil, fmt.Errorf("creation outcomes: %w", err)
	}
	defer rows.Close()
	out := make([]dataimport.CreationOutcome, 0, n)
	for rows.Next() {
		var o dataimport.CreationOutcome
		if err := rows.Scan(&o.Failed, &o.Code); err != nil {
			return nil, fmt.Errorf("creation outcomes: %w", err)
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// pauseByBrake pauses the supplier if it is still Ongoing (another worker
// may have tripped the brake first): false if it was not.
func (db *DB) pauseByBrake(ctx context.Context, code string, t BrakeTripped) (bool, error) {
	defer db.control.invalidate()
	ctx = WithActor(ctx, ActorSystem)
	rate := t.Trip.Percent()
	window := t.Trip.Window
	reason := dataimport.PauseReason{Actor: string(ActorSystem), Reason: t.Reason, At: time.Now().UTC(),
		FailureRate: &rate, Window: &window, TopCodes: t.Trip.TopCodes}
	rb, err := json.Marshal(reason)
	if err != nil {
		return false, fmt.Errorf("pause by brake: %w", err)
	}
	paused := false
	err = db.audited(ctx, AuditSupplierStatus, func(tx *gorm.DB) (string, any, any, error) {
		var sup []supplierRow
		if err := tx.Raw(`SELECT * FROM import_suppliers WHERE code = ? FOR UPDATE`, code).Scan(&sup).Error; err != nil {
			return "", nil, nil, err
		}
		if len(sup) == 0 || sup[0].Status != string(dataimport.SupplierOngoing) {
			return "", nil, nil, errNoChange
		}
		if err := tx.Exec(`UPDATE import_suppliers SET status = 'Paused', pause_reason = ?::jsonb, updated_at = now() WHERE id = ?`,
			string(rb), sup[0].ID).Error; err != nil {
			return "", nil, nil, err
		}
		if err := recordSupplierPaused(tx, sup[0].ID, t); err != nil {
			return "", nil, nil, err
		}
		paused = true
		return "supplier:" + code, map[string]string{"status": sup[0].Status},
			map[string]any{"status": string(dataimport.SupplierPaused), "reason": t.Reason, "failure_rate": rate,
				"window": window, "top_codes": t.Trip.TopCodes, "brake": brakeAudit(&t.Brake)}, nil
	})
	if err != nil {
		return false, fmt.Errorf("pause by brake: %w", err)
	}
	return paused, nil
}
