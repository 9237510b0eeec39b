package postgres

import (
	"context"
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
		WelcomeEmail: s.WelcomeEmail, PhoneRegion: s.PhoneRegion}
	if row.Status == "" {
		row.Status = string(dataimport.SupplierOngoing)
	}
	if row.PhoneRegion == "" {
		row.PhoneRegion = "GB"
	}
	if err := db.gorm.WithContext(ctx).Create(&row).Error; err != nil {
		if IsUniqueViolation(err) {
			return dataimport.Supplier{}, dataimport.Errorf(dataimport.CodeInvalid, "supplier %q already exists", s.Code)
		}
		return dataimport.Supplier{}, fmt.Errorf("create supplier %q: %w", s.Code, err)
	}
	return row.domain(), nil
}

// SetSupplierStatus changes a supplier's status; API processes hear of it
// through dataimport_control (control_cache.go) within milliseconds.
func (db *DB) SetSupplierStatus(ctx context.Context, code string, status dataimport.SupplierStatus) error {
	defer db.control.invalidate()
	res := db.gorm.WithContext(ctx).Model(&supplierRow{}).Where("code = ?", code).
		Updates(map[string]any{"status": string(status), "updated_at": time.Now().UTC()})
	if res.Error != nil {
		return fmt.Errorf("set supplier %q status: %w", code, res.Error)
	}
	if res.RowsAffected == 0 {
		return dataimport.ErrSupplierNotFound(code)
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
