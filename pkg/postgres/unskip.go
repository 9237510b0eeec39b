package postgres

import (
	"context"
	"fmt"

	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Unskip undoes MarkSkipped: partners may stage and create the account
// again. Audited (account.unskip) in the transaction of the change; an
// account that is not skipped (or unknown) is a dataimport error, and
// nothing is audited.
func (db *DB) Unskip(ctx context.Context, supplierCode, external string) error {
	s, err := db.SupplierByCode(ctx, supplierCode)
	if err != nil {
		return err
	}
	err = db.audited(ctx, AuditAccountUnskip, func(tx *gorm.DB) (string, any, any, error) {
		var before []struct {
			Status  string
			Skipped bool
		}
		if err := tx.Raw(`SELECT status, skipped FROM import_processes WHERE supplier_id = ? AND external_account_number = ? FOR UPDATE`,
			s.ID, external).Scan(&before).Error; err != nil {
			return "", nil, nil, err
		}
		if len(before) == 0 || !before[0].Skipped {
			return "", nil, nil, dataimport.Errorf(dataimport.CodeInvalid, "account %s/%s is not marked skipped", supplierCode, external)
		}
		if err := tx.Exec(`UPDATE import_processes SET skipped = false, modified_at = now() WHERE supplier_id = ? AND external_account_number = ?`,
			s.ID, external).Error; err != nil {
			return "", nil, nil, err
		}
		return "account:" + supplierCode + "/" + external, map[string]any{"status": before[0].Status, "skipped": true},
			map[string]any{"skipped": false}, nil
	})
	if _, ok := dataimport.AsError(err); ok {
		return err
	}
	if err != nil {
		return fmt.Errorf("unskip %s/%s: %w", supplierCode, external, err)
	}
	return nil
}
