package postgres

import "gorm.io/gorm"

// recordSupplierPaused records the partner event supplier.paused-v1 in the
// transaction that pauses the supplier.
func recordSupplierPaused(tx *gorm.DB, supplierID int64, code string, t BrakeTripped) error {
	_, _, _, _ = tx, supplierID, code, t
	return nil // the partner event log for supplier events lands with migration 00022
}
