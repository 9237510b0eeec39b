package postgres

import (
	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// recordSupplierPaused records the partner event supplier.paused-v1 in the
// transaction that pauses the supplier, so it exists only if the pause
// commits.
func recordSupplierPaused(tx *gorm.DB, supplierID int64, t BrakeTripped) error {
	return recordSupplierEvent(tx.Statement.Context, tx.Statement.ConnPool, supplierID, dataimport.EventSupplierPaused,
		dataimport.SupplierPausedData{Reason: t.Reason, FailureRate: t.Trip.Percent(), Window: t.Trip.Window, TopCodes: t.Trip.TopCodes})
}
