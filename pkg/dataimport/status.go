package dataimport

import "time"

// ImportStatus is what the status endpoint reports (interface 3.1).
type ImportStatus string

const (
	StatusUnknown    ImportStatus = "UNKNOWN"     // staged, never processed, or the last attempt failed
	StatusInProgress ImportStatus = "IN_PROGRESS" // a job is queued or running
	StatusCompleted  ImportStatus = "COMPLETED"   // a platform account exists
)

// ImportProcess is the partner-visible record of one account's migration.
type ImportProcess struct {
	ID                    int64
	SupplierID            int64
	ExternalAccountNumber string
	Status                ImportStatus
	Skipped               bool
	StagedVersion         int
	Attempt               int
	DryRun                bool // the attempt in progress is a dry run
	V2Status              V2Status
	Scheduled             bool       // a create (v1 or v2) scheduled the current attempt
	WindowStart           *time.Time // the v2 schedule window, when one was given
	WindowEnd             *time.Time
	LatestError           *Error
	PlatformAccountNumber string // "" until created
	AccountCreatedAt      *time.Time
	CreatedAt             time.Time
	ModifiedAt            time.Time
	// OrganisationID is the organisation the current attempt runs for (0:
	// not recorded); its slot counts against that organisation's cap.
	OrganisationID int64
}

// Imported reports whether a platform account exists for the process.
func (p *ImportProcess) Imported() bool { return p.PlatformAccountNumber != "" }

// AlreadyImported is the 400 for an account that has a platform account; the
// body carries both numbers so partners can reconcile.
func AlreadyImported(external, platform string) *Error {
	return &Error{
		Code:   CodeAccountAlreadyImported,
		Detail: "Account has already been imported.",
		Extra:  map[string]any{"external_account_number": external, "platform_account_number": platform},
	}
}

// ProcessAlreadyImported is the v2 API's 400 for an account that has a
// platform account, with both numbers.
func ProcessAlreadyImported(external, platform string) *Error {
	return &Error{
		Code:   CodeProcessAlreadyImported,
		Detail: "Account has already been imported.",
		Extra:  map[string]any{"external_account_number": external, "platform_account_number": platform},
	}
}
