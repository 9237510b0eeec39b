package dataimport

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Payment schedules and payment instructions of an account (issue 18,
// item 4). Both are optional arrays of the account object, created with it
// inside the one creation transaction.
//
// A schedule says how and how often the customer pays: a closed set of
// means and frequencies, a first collection date and a positive amount.
//
// An instruction is the same {vendor, reference, type} the post-import
// endpoint takes, with the same rules; the worker verifies it at the vendor
// before the creation transaction (never inside it) and stores it ACTIVE
// with the vendor's details. An account has at most one active instruction
// (the payment_instructions_one_active_idx index), so the array holds at
// most one.

type (
	PaymentMeans     string
	PaymentFrequency string
)

const (
	MeansDirectDebit  PaymentMeans = "DIRECT_DEBIT"
	MeansCard         PaymentMeans = "CARD"
	MeansBankTransfer PaymentMeans = "BANK_TRANSFER"
	MeansCashCheque   PaymentMeans = "CASH_CHEQUE"

	FrequencyWeekly      PaymentFrequency = "WEEKLY"
	FrequencyFortnightly PaymentFrequency = "FORTNIGHTLY"
	FrequencyFourWeekly  PaymentFrequency = "FOUR_WEEKLY"
	FrequencyMonthly     PaymentFrequency = "MONTHLY"
	FrequencyQuarterly   PaymentFrequency = "QUARTERLY"
	FrequencyAnnually    PaymentFrequency = "ANNUALLY"
)

// Allowed values, in the order error details and the OpenAPI document list
// them (the account_payment_schedules CHECKs say the same).
var (
	PaymentMeansValues = []PaymentMeans{MeansDirectDebit, MeansCard, MeansBankTransfer, MeansCashCheque}
	PaymentFrequencies = []PaymentFrequency{FrequencyWeekly, FrequencyFortnightly, FrequencyFourWeekly, FrequencyMonthly, FrequencyQuarterly, FrequencyAnnually}
)

// Array maxima of the account object (README, openapi.json maxItems).
const (
	MaxPaymentSchedules    = 10
	MaxPaymentInstructions = 1 // at most one active instruction per account
)

// PaymentSchedule is one payment schedule of an account.
type PaymentSchedule struct {
	Means     PaymentMeans     `json:"means" dataimport:"required"`
	StartDate Date             `json:"start_date" dataimport:"required"`
	Frequency PaymentFrequency `json:"frequency" dataimport:"required"`
	Amount    Money            `json:"amount" dataimport:"required"`
}

// AccountPaymentInstruction is a payment instruction given with the
// account: the fields of the post-import endpoint less the account's own.
type AccountPaymentInstruction struct {
	Type      PaymentInstructionType `json:"type" dataimport:"required"`
	Reference string                 `json:"reference" dataimport:"required"`
	Vendor    string                 `json:"vendor" dataimport:"required"`
}

// Instruction is the instruction to verify and store for the account.
func (p AccountPaymentInstruction) Instruction() PaymentInstruction {
	return PaymentInstruction{Vendor: p.Vendor, Reference: p.Reference, Type: p.Type, Status: PaymentInstructionActive}
}

func validatePaymentSchedules(c *collector, schedules []PaymentSchedule) {
	for i := range schedules {
		if c.full() {
			return
		}
		s := &schedules[i]
		it := itemOf("payment_schedules", i)
		choice(c, it.field("means"), s.Means, PaymentMeansValues)
		choice(c, it.field("frequency"), s.Frequency, PaymentFrequencies)
		amount := it.field("amount")
		if !s.Amount.IsPositive() {
			c.addAt(amount, CodeAmountNotPositive, "Ensure this value is greater than 0.")
		}
		c.money(amount, s.Amount)
		c.storedMoney(amount, s.Amount)
	}
}

func validateAccountPaymentInstructions(c *collector, ins []AccountPaymentInstruction, opts AccountRules) {
	for i := range ins {
		if c.full() {
			return
		}
		p := &ins[i]
		validateInstruction(c, itemOf("payment_instructions", i), p.Vendor, p.Reference, p.Type, opts.PaymentVendors, !opts.SkipPaymentVendors)
	}
}

// validateInstruction is the one set of rules for a payment instruction,
// whether it comes with the account or to the post-import endpoint: the
// vendor is one of vendors (exact spelling; checked only when checkVendor),
// the reference is one token without control characters or spaces (vendor
// IDs never contain them, and it ends up in a URL path), and the type is
// CARD or DIRECT_DEBIT.
func validateInstruction(c *collector, it item, vendor, reference string, typ PaymentInstructionType, vendors []string, checkVendor bool) {
	switch {
	case vendor == "":
		c.addAt(it.field("vendor"), CodeBlank, "This field may not be blank.")
	case checkVendor && !slices.Contains(vendors, vendor):
		detail := fmt.Sprintf("%q is not a valid choice.", vendor)
		if len(vendors) > 0 {
			detail += " Configured vendors: " + strings.Join(vendors, ", ") + "."
		}
		c.addAt(it.field("vendor"), CodeInvalidChoice, detail)
	default:
		c.maxLength(it.field("vendor"), vendor, defaultMaxLength)
	}
	c.requiredString(it.field("reference"), reference, maxPaymentReference)
	if strings.ContainsFunc(reference, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) {
		c.addAt(it.field("reference"), CodeInvalid, "A reference may not contain spaces or control characters.")
	}
	choice(c, it.field("type"), typ, PaymentInstructionTypes)
}
