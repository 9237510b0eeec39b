package postgres

import (
	"context"
	"fmt"

	"gorm.io/gorm"

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
	var before []struct {
		Status  string
		Skipped bool
	}
	err = db.audited(ctx, AuditAccountSkip, func(tx *gorm.DB) (string, any, any, error) {
		target := "account:" + supplierCode + "/" + external
		if err := tx.Raw(`SELECT status, skipped FROM import_processes WHERE supplier_id = ? AND external_account_number = ? FOR UPDATE`,
			s.ID, external).Scan(&before).Error; err != nil {
			return "", nil, nil, err
		}
		err := tx.Raw(`
		INSERT INTO import_processes (supplier_id, external_account_number, skipped)
		VALUES (?, ?, true)
		ON CONFLICT (supplier_id, external_account_number) DO UPDATE
		   SET skipped = true, modified_at = now()
		 WHERE import_processes.status = 'UNKNOWN'
		RETURNING id`, s.ID, external).Scan(&ids).Error
		if err != nil {
			return "", nil, nil, err
		}
		if len(ids) == 0 { // nothing changed, nothing audited
			return "", nil, nil, dataimport.Errorf(dataimport.CodeImportInProgress,
				"account %s/%s is already imported or being imported; it cannot be skipped", supplierCode, external)
		}
		var was any // nil: the account had never been staged
		if len(before) == 1 {
			was = map[string]any{"status": before[0].Status, "skipped": before[0].Skipped}
		}
		return target, was, map[string]any{"skipped": true}, nil
	})
	if _, ok := dataimport.AsError(err); ok {
		return err
	}
	if err != nil {
		return fmt.Errorf("mark %s/%s skipped: %w", supplierCode, external, err)
	}
	return nil
}
