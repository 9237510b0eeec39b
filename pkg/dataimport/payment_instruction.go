package dataimport

import "time"

// PaymentInstructionType is what kind of instruction a vendor reference names
// (interface 2.9, CONTRACT §7).
type PaymentInstructionType string

const (
	PaymentCard        PaymentInstructionType = "CARD"
	PaymentDirectDebit PaymentInstructionType = "DIRECT_DEBIT"
)

// PaymentInstructionTypes lists the accepted types.
var PaymentInstructionTypes = []PaymentInstructionType{PaymentCard, PaymentDirectDebit}

// Status of a stored payment instruction. At most one per account is active.
const PaymentInstructionActive = "ACTIVE"

// Error codes of the payment-instruction endpoint (CONTRACT §7). Same
// stability promise as the other codes: never rename one.
const (
	CodeAccountHasActiveInstruction   = "account_already_has_active_instruction"
	CodePaymentInstructionNotFound    = "payment_instruction_not_found_at_vendor"
	CodePaymentInstructionRejected    = "payment_instruction_rejected_by_vendor"
	CodePaymentVendorUnavailable      = "payment_vendor_unavailable"
	CodePaymentInstructionDeactivated = "payment_instruction_deactivated"
)

const (
	maxPaymentReference = 255
	maxSupplierCode     = 64 // the import_suppliers.code check
)

// PaymentInstructionRequest is the body of POST /payment-instruction/create/.
type PaymentInstructionRequest struct {
	ImportSupplier        string                 `json:"import_supplier" dataimport:"required"`
	ExternalAccountNumber string                 `json:"external_account_number" dataimport:"required"`
	Vendor                string                 `json:"vendor" dataimport:"required"`
	Reference             string                 `json:"reference" dataimport:"required"`
	Type                  PaymentInstructionType `json:"type" dataimport:"required"`
}

// PaymentInstructionValidator returns the rules of a request for the given
// configured vendors, ready for Decode.
func PaymentInstructionValidator(vendors []string) func(*PaymentInstructionRequest) []FieldError {
	return func(r *PaymentInstructionRequest) []FieldError { return ValidatePaymentInstruction(r, vendors) }
}

// ValidatePaymentInstruction checks a decoded request: every field present
// is non-blank and fits, and the instruction passes validateInstruction,
// the rules an account's payment_instructions follow too.
func ValidatePaymentInstruction(r *PaymentInstructionRequest, vendors []string) []FieldError {
	c := &collector{}
	c.requiredString(field("import_supplier"), r.ImportSupplier, maxSupplierCode)
	c.identifier(field("external_account_number"), r.ExternalAccountNumber)
	validateInstruction(c, objectAt(""), r.Vendor, r.Reference, r.Type, vendors, true)
	return c.list()
}

// PaymentDetails is what the vendor tells about an instruction: the card
// for CARD, the mandate's status for DIRECT_DEBIT.
type PaymentDetails struct {
	CardBrand     string
	CardLast4     string
	CardExpMonth  int
	CardExpYear   int
	MandateStatus string
}

// PaymentInstruction is a stored, vendor-verified instruction of an account.
type PaymentInstruction struct {
	ID        int64
	AccountID int64
	Vendor    string
	Reference string
	Type      PaymentInstructionType
	Status    string
	Details   PaymentDetails
	CreatedAt time.Time
}

// SameAs reports whether o names the same instruction (vendor, reference,
// type): asking for it again is a safe retry, not a conflict.
func (p PaymentInstruction) SameAs(o PaymentInstruction) bool {
	return p.Vendor == o.Vendor && p.Reference == o.Reference && p.Type == o.Type
}

// ErrAccountHasActiveInstruction refuses a second active instruction.
func ErrAccountHasActiveInstruction(active PaymentInstruction) *Error {
	return Errorf(CodeAccountHasActiveInstruction,
		"The account already has an active payment instruction (%s %s %s).", active.Vendor, active.Type, active.Reference)
}
