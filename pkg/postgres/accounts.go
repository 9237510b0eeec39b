package postgres

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// ImportedAccount identifies a created account for post-import requests.
type ImportedAccount struct {
	ID                    int64
	ProcessID             int64 // the import process that created it: its timeline records the requests
	SupplierID            int64
	ExternalAccountNumber string
	PlatformAccountNumber string
}

// ErrAccountNotFound is the 404 of post-import endpoints: no such account, not
// created yet, or a supplier the caller may not act for.
func ErrAccountNotFound() *dataimport.Error {
	return dataimport.Errorf(dataimport.CodeNotFound, "Account not found: it does not exist or has not been imported yet.")
}

// ImportedAccount loads the created account of (supplier, external number).
func (db *DB) ImportedAccount(ctx context.Context, supplierID int64, external string) (ImportedAccount, error) {
	var a ImportedAccount
	err := db.gorm.WithContext(ctx).Raw(`SELECT id, import_process_id AS process_id, supplier_id, external_account_number, platform_account_number
		FROM accounts WHERE supplier_id = ? AND external_account_number = ?`, supplierID, external).Take(&a).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return ImportedAccount{}, ErrAccountNotFound()
	}
	if err != nil {
		return ImportedAccount{}, fmt.Errorf("load account: %w", err)
	}
	return a, nil
}
