package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// CreateSupplier inserts a supplier; a duplicate code is a domain conflict.
func (db *DB) CreateSupplier(ctx context.Context, s dataimport.Supplier) (dataimport.Supplier, error) {
	defer db.control.invalidate()
	row := supplierRow{Code: s.Code, Status: string(s.Status), DocumentRoot: s.DocumentRoot,
		WelcomeEmail: s.WelcomeEmail, PhoneRegion: s.PhoneRegion, RequireProducts: s.RequireProducts, Market: s.Market}
	if row.Market == "" {
		row.Market = "NONE"
	}
	if row.Status == "" {
		row.Status = string(dataimport.SupplierOngoing)
	}
	if row.PhoneRegion == "" {
		row.PhoneRegion = "GB"
	}
	err := db.audited(ctx, AuditSupplierCreate, func(tx *gorm.DB) (string, any, any, error) {
		if err := tx.Create(&row).Error; err != nil {
			return "", nil, nil, err
		}
		return "supplier:" + row.Code, nil, supplierAudit(row), nil
	})
	if err != nil {
		if IsUniqueViolation(err) {
			return dataimport.Supplier{}, dataimport.Errorf(dataimport.CodeInvalid, "supplier %q already exists", s.Code)
		}
		return dataimport.Supplier{}, fmt.Errorf("create supplier %q: %w", s.Code, err)
	}
	return row.domain(), nil
}

// supplierAudit is what the audit log keeps of a supplier's settings.
func supplierAudit(r supplierRow) map[string]any {
	return map[string]any{"code": r.Code, "status": r.Status, "document_root": r.DocumentRoot,
		"welcome_email": r.WelcomeEmail, "phone_region": r.PhoneRegion}
}

// SetSupplierStatus changes a supplier's status; API processes hear of it
// through dataimport_control (control_cache.go) within milliseconds. The
// row lock waits for creation transactions under way and, once this
// commits, none of a Paused or Complete supplier starts (hold.go).
func (db *DB) SetSupplierStatus(ctx context.Context, code string, status dataimport.SupplierStatus) error {
	defer db.control.invalidate()
	err := db.audited(ctx, AuditSupplierStatus, func(tx *gorm.DB) (string, any, any, error) {
		var before []string
		if err := tx.Raw(`SELECT status FROM import_suppliers WHERE code = ? FOR UPDATE`, code).Scan(&before).Error; err != nil {
			return "", nil, nil, err
		}
		if len(before) == 0 {
			return "", nil, nil, dataimport.ErrSupplierNotFound(code)
		}
		// Why it is Paused is kept for the console; set Ongoing or Complete, it is gone.
		var reason any
		if status == dataimport.SupplierPaused {
			b, err := json.Marshal(dataimport.PauseReason{Actor: string(ActorFrom(ctx)), Reason: "paused by an operator", At: time.Now().UTC()})
			if err != nil {
				return "", nil, nil, err
			}
			reason = string(b)
		}
		if err := tx.Exec(`UPDATE import_suppliers SET status = ?, pause_reason = ?::jsonb, updated_at = ? WHERE code = ?`,
			string(status), reason, time.Now().UTC(), code).Error; err != nil {
			return "", nil, nil, err
		}
		if status == dataimport.SupplierComplete {
			if err := endPendingOnComplete(tx, code); err != nil {
				return "", nil, nil, err
			}
		}
		return "supplier:" + code, map[string]string{"status": before[0]}, map[string]string{"status": string(status)}, nil
	})
	if err != nil {
		if _, ok := dataimport.AsError(err); ok {
			return err
		}
		return fmt.Errorf("set supplier %q status: %w", code, err)
	}
	return nil
}

// ListSuppliers returns every supplier ordered by code.
func (db *DB) ListSuppliers(ctx context.Context) ([]dataimport.Supplier, error) {
	var rows []supplierRow
	if err := db.gorm.WithContext(ctx).Order("code").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list suppliers: %w", err)
	}
	out := make([]dataimport.Supplier, len(rows))
	for i, r := range rows {
		out[i] = r.domain()
	}
	return out, nil
}

// SupplierByCode loads a supplier regardless of tenancy (operator use only).
func (db *DB) SupplierByCode(ctx context.Context, code string) (dataimport.Supplier, error) {
	var row supplierRow
	err := db.gorm.WithContext(ctx).Where("code = ?", code).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return dataimport.Supplier{}, dataimport.ErrSupplierNotFound(code)
	}
	if err != nil {
		return dataimport.Supplier{}, fmt.Errorf("load supplier %q: %w", code, err)
	}
	return row.domain(), nil
}

// SupplierForOrganisation loads a supplier the organisation may act for. A
// supplier that exists but is not granted is answered exactly like one that
// does not exist, so a tenant learns nothing about another's suppliers.
func (db *DB) SupplierForOrganisation(ctx context.Context, orgID int64, code string) (dataimport.Supplier, error) {
	return cachedControl(db, "supplier\x00"+strconv.FormatInt(orgID, 10)+"\x00"+code, func() (dataimport.Supplier, error) {
		return db.supplierForOrganisation(ctx, orgID, code)
	})
}

func (db *DB) supplierForOrganisation(ctx context.Context, orgID int64, code string) (dataimport.Supplier, error) {
	var row supplierRow
	err := db.gorm.WithContext(ctx).
		Joins("JOIN organisation_suppliers g ON g.supplier_id = import_suppliers.id AND g.organisation_id = ?", orgID).
		Where("import_suppliers.code = ?", code).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return dataimport.Supplier{}, dataimport.ErrSupplierNotFound(code)
	}
	if err != nil {
		return dataimport.Supplier{}, fmt.Errorf("load supplier %q: %w", code, err)
	}
	return row.domain(), nil
}

// SupplierSettings are the issue-18 settings an operator may change; nil
// leaves a setting as it is.
type SupplierSettings struct {
	RequireProducts *bool
	Market          *string
}

// UpdateSupplierSettings changes a supplier's settings; API processes hear
// of it through dataimport_control within milliseconds.
func (db *DB) UpdateSupplierSettings(ctx context.Context, code string, s SupplierSettings) (dataimport.Supplier, error) {
	defer db.control.invalidate()
	err := db.audited(ctx, AuditSupplierUpdate, func(tx *gorm.DB) (string, any, any, error) {
		var before []supplierRow
		if err := tx.Raw(`SELECT * FROM import_suppliers WHERE code = ? FOR UPDATE`, code).Scan(&before).Error; err != nil {
			return "", nil, nil, err
		}
		if len(before) == 0 {
			return "", nil, nil, dataimport.ErrSupplierNotFound(code)
		}
		set := map[string]any{"updated_at": time.Now().UTC()}
		after := supplierSettingsAudit{RequireProducts: before[0].RequireProducts, Market: before[0].Market}
		if s.RequireProducts != nil {
			set["require_products"], after.RequireProducts = *s.RequireProducts, *s.RequireProducts
		}
		if s.Market != nil {
			set["market"], after.Market = *s.Market, *s.Market
		}
		if err := tx.Model(&supplierRow{}).Where("code = ?", code).Updates(set).Error; err != nil {
			return "", nil, nil, err
		}
		return "supplier:" + code, supplierSettingsAudit{RequireProducts: before[0].RequireProducts, Market: before[0].Market}, after, nil
	})
	if err != nil {
		if _, ok := dataimport.AsError(err); ok {
			return dataimport.Supplier{}, err
		}
		return dataimport.Supplier{}, fmt.Errorf("update supplier %q: %w", code, err)
	}
	return db.SupplierByCode(ctx, code)
}

// supplierSettingsAudit is the audit row's view of a supplier's settings.
type supplierSettingsAudit struct {
	RequireProducts bool   `json:"require_products"`
	Market          string `json:"market"`
}
