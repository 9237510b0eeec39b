package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

type processRow struct {
	ID                    int64 `gorm:"primaryKey"`
	SupplierID            int64
	ExternalAccountNumber string
	Status                string
	Skipped               bool
	StagedVersion         int
	Attempt               int
	DryRun                bool
	V2Status              string
	Scheduled             bool
	WindowStart           *time.Time
	WindowEnd             *time.Time
	LatestError           []byte
	PlatformAccountNumber *string
	AccountCreatedAt      *time.Time
	CreatedAt             time.Time
	ModifiedAt            time.Time
	AttemptOrganisationID *int64
}

func (processRow) TableName() string { return "import_processes" }

func (r processRow) domain() dataimport.ImportProcess {
	p := dataimport.ImportProcess{
		ID: r.ID, SupplierID: r.SupplierID, ExternalAccountNumber: r.ExternalAccountNumber,
		Status: dataimport.ImportStatus(r.Status), Skipped: r.Skipped, StagedVersion: r.StagedVersion,
		Attempt: r.Attempt, DryRun: r.DryRun, V2Status: dataimport.V2Status(r.V2Status), Scheduled: r.Scheduled,
		WindowStart: r.WindowStart, WindowEnd: r.WindowEnd, AccountCreatedAt: r.AccountCreatedAt, CreatedAt: r.CreatedAt, ModifiedAt: r.ModifiedAt,
	}
	if r.PlatformAccountNumber != nil {
		p.PlatformAccountNumber = *r.PlatformAccountNumber
	}
	if r.AttemptOrganisationID != nil {
		p.OrganisationID = *r.AttemptOrganisationID
	}
	if len(r.LatestError) > 0 {
		var e dataimport.Error
		if json.Unmarshal(r.LatestError, &e) == nil {
			p.LatestError = &e
		}
	}
	return p
}

// ErrProcessNotFound means no import process exists for the pair.
var ErrProcessNotFound = dataimport.Errorf(dataimport.CodeNotFound, "No account import process found for this import_supplier and external_account_number.")

// Process loads the import process of (supplier, external number).
func (db *DB) Process(ctx context.Context, supplierID int64, external string) (dataimport.ImportProcess, error) {
	var row processRow
	err := db.gorm.WithContext(ctx).
		Where("supplier_id = ? AND external_account_number = ?", supplierID, external).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return dataimport.ImportProcess{}, ErrProcessNotFound
	}
	if err != nil {
		return dataimport.ImportProcess{}, fmt.Errorf("load import process: %w", err)
	}
	return row.domain(), nil
}

// ProcessForOrganisation loads a process by supplier code and external
// number in one query, provided the organisation may act for the supplier:
// the status read partners poll, kept to a single round trip. It reads from
// the read replica when one is configured (see UseReadReplica: it may lag a
// create by the replication delay), so it must not serve a read-your-writes
// path; Process does, on the primary.
func (db *DB) ProcessForOrganisation(ctx context.Context, orgID int64, supplierCode, external string) (dataimport.ImportProcess, error) {
	var rows []processRow
	err := db.readGorm.WithContext(ctx).Raw(`
		SELECT p.* FROM import_processes p
		  JOIN import_suppliers s ON s.id = p.supplier_id AND s.code = ?
		  JOIN organisation_suppliers g ON g.supplier_id = s.id AND g.organisation_id = ?
		 WHERE p.external_account_number = ?`, supplierCode, orgID, external).Scan(&rows).Error
	if err != nil {
		return dataimport.ImportProcess{}, fmt.Errorf("load import process: %w", err)
	}
	if len(rows) == 0 {
		return dataimport.ImportProcess{}, ErrProcessNotFound
	}
	return rows[0].domain(), nil
}
