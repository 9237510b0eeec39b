package postgres

import (
	"context"
	"fmt"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// MarkSkipped marks an account so that partners can neither stage nor create
// it. It may be called before the account was ever staged. An account already
// imported or being imported cannot be skipped.
func (db *DB) MarkSkipped(ctx context.Context, supplierCode, external string) error {
	s, err := db.SupplierByCode(ctx, supplierCode)
	if err != nil {
		return err
	}
	var ids []int64
	err = db.gorm.WithContext(ctx).Raw(`
		INSERT INTO import_processes (supplier_id, external_account_number, skipped)
		VALUES (?, ?, true)
		ON CONFLICT (supplier_id, external_account_number) DO UPDATE
		   SET skipped = true, modified_at = now()
		 WHERE import_processes.status = 'UNKNOWN'
		RETURNING id`, s.ID, external).Scan(&ids).Error
	if err != nil {
		return fmt.Errorf("mark %s/%s skipped: %w", supplierCode, external, err)
	}
	if len(ids) == 0 {
		return dataimport.Errorf(dataimport.CodeImportInProgress,
			"account %s/%s is already imported or being imported; it cannot be skipped", supplierCode, external)
	}
	return nil
}
