package postgres

import (
	"encoding/json"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Row types mirror the tables in migrations/. They stay private: the rest of
// the service sees domain types only.

type organisationRow struct {
	ID        int64 `gorm:"primaryKey"`
	Name      string
	CreatedAt time.Time
}

func (organisationRow) TableName() string { return "organisations" }

func (r organisationRow) domain() dataimport.Organisation {
	return dataimport.Organisation{ID: r.ID, Name: r.Name, CreatedAt: r.CreatedAt}
}

type supplierRow struct {
	ID           int64 `gorm:"primaryKey"`
	Code         string
	Status       string
	DocumentRoot string
	WelcomeEmail bool
	PhoneRegion  string
	// Issue 18 settings.
	RequireProducts bool
	Market          string
	CreatedAt       time.Time
	UpdatedAt       time.Time
	// CONTRACT §14 (migration 00025).
	BrakeFailureBp *int
	BrakeWindow    *int
	PauseReason    *string `gorm:"type:jsonb"`
}

func (supplierRow) TableName() string { return "import_suppliers" }

func (r supplierRow) domain() dataimport.Supplier {
	s := dataimport.Supplier{
		ID: r.ID, Code: r.Code, Status: dataimport.SupplierStatus(r.Status),
		DocumentRoot: r.DocumentRoot, WelcomeEmail: r.WelcomeEmail, PhoneRegion: r.PhoneRegion,
		RequireProducts: r.RequireProducts, Market: r.Market, CreatedAt: r.CreatedAt,
	}
	if r.BrakeFailureBp != nil && r.BrakeWindow != nil {
		s.Brake = &dataimport.Brake{FailureBP: *r.BrakeFailureBp, Window: *r.BrakeWindow}
	}
	if r.PauseReason != nil {
		var pr dataimport.PauseReason
		if json.Unmarshal([]byte(*r.PauseReason), &pr) == nil {
			s.PauseReason = &pr
		}
	}
	return s
}

type teamRow struct {
	ID        int64 `gorm:"primaryKey"`
	Name      string
	CreatedAt time.Time
}

func (teamRow) TableName() string { return "operations_teams" }
