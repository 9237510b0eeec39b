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
	// KeptDigest is read only by ProcessForOrganisation (never written).
	KeptDigest *string `gorm:"->"`
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

// StatusProcess is an import process as a status read sees it, with the
// landed digest kept for its account (nil: not created, or none kept for
// its current version; see landed_keep.go).
type StatusProcess struct {
	dataimport.ImportProcess
	KeptDigest *string
}

// ProcessForOrganisation loads a process by supplier code and external
// number, provided the organisation may act for the supplier, with its
// account's kept landed digest: the status read partners poll, in a single
// round trip (each one more is one more wait for a CPU on a busy host). It
// reads from the read replica when one is configured (see UseReadReplica:
// it may lag a create by the replication delay), so it must not serve a
// read-your-writes path; Process does, on the primary.
func (db *DB) ProcessForOrganisation(ctx context.Context, orgID int64, supplierCode, external string) (StatusProcess, error) {
	var rows []processRow
	err := db.readGorm.WithContext(ctx).Raw(`
		SELECT p.*, d.digest AS kept_digest FROM import_processes p
		  JOIN import_suppliers s ON s.id = p.supplier_id AND s.code = ?
		  JOIN organisation_suppliers g ON g.supplier_id = s.id AND g.organisation_id = ?
		  LEFT JOIN accounts a ON a.platform_account_number = p.platform_account_number
		  LEFT JOIN landed_digests d ON d.account_id = a.id AND d.version = a.landed_version
		 WHERE p.external_account_number = ?`, supplierCode, orgID, external).Scan(&rows).Error
	if err != nil {
		return StatusProcess{}, fmt.Errorf("load import process: %w", err)
	}
	if len(rows) == 0 {
		return StatusProcess{}, ErrProcessNotFound
	}
	return StatusProcess{ImportProcess: rows[0].domain(), KeptDigest: rows[0].KeptDigest}, nil
}
