package dataimport

import (
	"errors"
	"regexp"
	"time"
)

// SupplierStatus is set only by operators (interface 2.11).
type SupplierStatus string

const (
	SupplierOngoing  SupplierStatus = "Ongoing"
	SupplierPaused   SupplierStatus = "Paused"
	SupplierComplete SupplierStatus = "Complete"
)

// ParseSupplierStatus accepts the three statuses exactly as the interface spells them.
func ParseSupplierStatus(s string) (SupplierStatus, bool) {
	switch st := SupplierStatus(s); st {
	case SupplierOngoing, SupplierPaused, SupplierComplete:
		return st, true
	}
	return "", false
}

// Supplier groups migrated accounts and carries operator-configured behaviour.
type Supplier struct {
	ID           int64
	Code         string
	Status       SupplierStatus
	DocumentRoot string
	WelcomeEmail bool
	PhoneRegion  string
	// RequireProducts: agreements and SUPPLY_CHARGE transactions must name
	// catalogue products (CONTRACT §10).
	RequireProducts bool
	// Market names the market rule set (pkg/market); "NONE" is generic.
	Market    string
	CreatedAt time.Time
	// Brake pauses the supplier on a high creation failure rate (nil: off).
	Brake *Brake
	// PauseReason says why it is Paused (nil when it is not).
	PauseReason *PauseReason
}

// AcceptsAccounts reports whether partners may stage, create or attach data.
func (s *Supplier) AcceptsAccounts() bool { return s.Status == SupplierOngoing }

// NotOngoingError is the answer for a Paused or Complete supplier.
func (s *Supplier) NotOngoingError() *Error {
	return Errorf(CodeSupplierNotOngoing, "The migration for import supplier %q is %s; it does not accept accounts.", s.Code, s.Status)
}

// ErrSupplierNotFound is the answer both for a supplier that does not exist and
// for one the caller may not act for, so that tenants cannot probe each other.
func ErrSupplierNotFound(code string) *Error {
	return Errorf(CodeSupplierNotFound, "Import supplier %q does not exist.", code)
}

var (
	supplierCodeRe = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	regionRe       = regexp.MustCompile(`^[A-Z]{2}$`)
)

// ValidSupplierCode mirrors the database check so operators get a clear message.
func ValidSupplierCode(code string) bool { return supplierCodeRe.MatchString(code) }

// ValidPhoneRegion accepts an ISO 3166-1 alpha-2 region such as GB.
func ValidPhoneRegion(r string) bool { return regionRe.MatchString(r) }

// Organisation is a tenant: it owns API keys and is granted suppliers.
type Organisation struct {
	ID        int64
	Name      string
	CreatedAt time.Time
}

// Team is an operations team named by create-account requests.
type Team struct {
	ID        int64
	Name      string
	CreatedAt time.Time
}

// APIKey is the stored view of an organisation's key (the secret itself is
// never stored).
type APIKey struct {
	ID             int64
	OrganisationID int64
	Prefix         string
	Scopes         []string
}

// ScopeProducts lets a key write the instance-wide product catalogue.
const ScopeProducts = "products"

// Scopes are every scope a key may be given.
var Scopes = []string{ScopeProducts}

// ErrAPIKeyNotFound means no active key matches.
var ErrAPIKeyNotFound = errors.New("api key not found")
