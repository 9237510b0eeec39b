package dataimport

import (
	"slices"

	"github.com/shopspring/decimal"
)

// This file is the account object of CONTRACT §5 as Go types. JSON names are
// the wire names. Conventions, relied on by DecodeStrict and ValidateAccount:
//   - `dataimport:"required"`: the binder reports "required" if the key is absent;
//   - pointer fields are optional: nil means "not given" (absent or null);
//   - after ValidateAccount, defaulted pointers are filled (see accessors).

type (
	AccountType             string
	CommunicationPreference string
	SalesChannel            string
	Fuel                    string
	TransactionType         string
	TransactionReason       string
	PaymentType             string
	RateBand                string
	TaxType                 string
	UnitType                string
)

const (
	AccountTypeDomestic AccountType = "DOMESTIC"
	AccountTypeBusiness AccountType = "BUSINESS"

	CommunicationOnline CommunicationPreference = "ONLINE"
	CommunicationPrint  CommunicationPreference = "PRINT"

	SalesChannelDirect          SalesChannel = "DIRECT"
	SalesChannelBroker          SalesChannel = "BROKER"
	SalesChannelPriceComparison SalesChannel = "PRICE_COMPARISON"
	SalesChannelPartner         SalesChannel = "PARTNER"

	FuelElectricity Fuel = "ELECTRICITY"
	FuelGas         Fuel = "GAS"

	TransactionCharge       TransactionType = "CHARGE"
	TransactionCredit       TransactionType = "CREDIT"
	TransactionPayment      TransactionType = "PAYMENT"
	TransactionRepayment    TransactionType = "REPAYMENT"
	TransactionSupplyCharge TransactionType = "SUPPLY_CHARGE"

	ReasonImportedCharge       TransactionReason = "IMPORTED_CHARGE"
	ReasonImportedCredit       TransactionReason = "IMPORTED_CREDIT"
	ReasonAccountChargePayment TransactionReason = "ACCOUNT_CHARGE_PAYMENT"
	ReasonFullCreditRefund     TransactionReason = "FULL_CREDIT_REFUND"
	ReasonGeneralCredit        TransactionReason = "GENERAL_CREDIT"

	PaymentTypeDDRegularCollection PaymentType = "DD_REGULAR_COLLECTION"
	PaymentTypeDirectCredit        PaymentType = "DIRECT_CREDIT"
	PaymentTypeDebitCard           PaymentType = "DEBIT_CARD"

	RateBandConsumptionStandard RateBand = "CONSUMPTION_STANDARD"
	TaxTypeVAT                  TaxType  = "VAT"
	UnitTypeProportion          UnitType = "PROPORTION"
)

// Allowed values, in the order error details and the OpenAPI document list
// them. The interface lists only the values it has "seen" for the
// transaction enums; those are exactly what we accept until it says more.
var (
	AccountTypes             = []AccountType{AccountTypeDomestic, AccountTypeBusiness}
	CommunicationPreferences = []CommunicationPreference{CommunicationOnline, CommunicationPrint}
	SalesChannels            = []SalesChannel{SalesChannelDirect, SalesChannelBroker, SalesChannelPriceComparison, SalesChannelPartner}
	Fuels                    = []Fuel{FuelElectricity, FuelGas}
	Titles                   = []string{"Dr", "Miss", "Mr", "Mrs", "Ms", "Mx", "Prof", "Rev", "Sir", "Lady"}
	TransactionTypes         = []TransactionType{TransactionCharge, TransactionCredit, TransactionPayment, TransactionRepayment, TransactionSupplyCharge}
	TransactionReasons       = []TransactionReason{ReasonImportedCharge, ReasonImportedCredit, ReasonAccountChargePayment, ReasonFullCreditRefund, ReasonGeneralCredit}
	PaymentTypes             = []PaymentType{PaymentTypeDDRegularCollection, PaymentTypeDirectCredit, PaymentTypeDebitCard}
	RateBands                = []RateBand{RateBandConsumptionStandard}
	TaxTypes                 = []TaxType{TaxTypeVAT}
	UnitTypes                = []UnitType{UnitTypeProportion}
)

// Account is the body of validate-account and stage-account.
type Account struct {
	ImportSupplier               string                   `json:"import_supplier" dataimport:"required"`
	ExternalAccountNumber        string                   `json:"external_account_number" dataimport:"required"`
	AccountType                  *AccountType             `json:"account_type,omitempty"`
	UnknownOccupier              *bool                    `json:"unknown_occupier,omitempty"`
	Customers                    []Customer               `json:"customers,omitempty" dataimport:"max=50"`
	BillingName                  *string                  `json:"billing_name,omitempty"`
	BillingAddress1              *string                  `json:"billing_address1,omitempty"`
	BillingAddress2              *string                  `json:"billing_address2,omitempty"`
	BillingAddress3              *string                  `json:"billing_address3,omitempty"`
	BillingAddress4              *string                  `json:"billing_address4,omitempty"`
	BillingAddress5              *string                  `json:"billing_address5,omitempty"`
	BillingPostcode              *string                  `json:"billing_postcode,omitempty"`
	BillingEmail                 *string                  `json:"billing_email,omitempty"`
	CommunicationPreference      *CommunicationPreference `json:"communication_preference,omitempty"`
	SalesChannel                 SalesChannel             `json:"sales_channel" dataimport:"required"`
	SalesSubchannel              *string                  `json:"sales_subchannel,omitempty"`
	DateOfSale                   *Date                    `json:"date_of_sale,omitempty"`
	SupplyAddresses              []SupplyAddress          `json:"supply_addresses,omitempty" dataimport:"max=100"`
	LastStatementClosingDate     *Date                    `json:"last_statement_closing_date,omitempty"`
	NextBillDueDate              *Date                    `json:"next_bill_due_date,omitempty"`
	TransferBalance              *Money                   `json:"transfer_balance,omitempty"`
	Metadata                     []MetadataItem           `json:"metadata,omitempty" dataimport:"max=100"`
	References                   []Reference              `json:"references,omitempty" dataimport:"max=100"`
	Notes                        []Note                   `json:"notes,omitempty" dataimport:"max=1000"`
	CurrentStatementTransactions []Transaction            `json:"current_statement_transactions,omitempty" dataimport:"max=100"`
	// Payment schedules and instructions (payment_schedule.go); the
	// maxima are MaxPaymentSchedules and MaxPaymentInstructions.
	PaymentSchedules    []PaymentSchedule           `json:"payment_schedules,omitempty" dataimport:"max=10"`
	PaymentInstructions []AccountPaymentInstruction `json:"payment_instructions,omitempty" dataimport:"max=1"`
}

type Customer struct {
	GivenName           string               `json:"given_name" dataimport:"required"`
	FamilyName          *string              `json:"family_name,omitempty"`
	Title               *string              `json:"title,omitempty"`
	Salutation          *string              `json:"salutation,omitempty"`
	Email               *string              `json:"email,omitempty"`
	Mobile              *string              `json:"mobile,omitempty"`
	Landline            *string              `json:"landline,omitempty"`
	DateOfBirth         *Date                `json:"date_of_birth,omitempty"`
	CustomerPreferences *CustomerPreferences `json:"customer_preferences,omitempty"`
	PSR                 []PSREntry           `json:"psr,omitempty" dataimport:"max=20"`
}

// PSREntry is a priority services register need of a customer; the
// supplier's market decides which codes exist.
type PSREntry struct {
	Code          string `json:"code" dataimport:"required"`
	EffectiveFrom *Date  `json:"effective_from,omitempty"`
	EffectiveTo   *Date  `json:"effective_to,omitempty"`
}

// CustomerPreferences: every flag defaults to false, so plain bools suffice
// (an absent key binds as false; null is refused).
type CustomerPreferences struct {
	OptedIntoSMS             bool `json:"opted_into_sms"`
	OptedIntoUpdates         bool `json:"opted_into_updates"`
	OptedIntoOffers          bool `json:"opted_into_offers"`
	OptedIntoRecommended     bool `json:"opted_into_recommended"`
	OptedIntoThirdParties    bool `json:"opted_into_third_parties"`
	IsUserPSRConsentObtained bool `json:"is_user_psr_consent_obtained"`
}

type SupplyAddress struct {
	SupplyAddress1                  string       `json:"supply_address1" dataimport:"required"`
	SupplyAddress2                  *string      `json:"supply_address2,omitempty"`
	SupplyAddress3                  *string      `json:"supply_address3,omitempty"`
	SupplyAddress4                  *string      `json:"supply_address4,omitempty"`
	SupplyAddress5                  *string      `json:"supply_address5,omitempty"`
	SupplyPostcode                  string       `json:"supply_postcode" dataimport:"required"`
	CustomerAtSupplyAddressFromDate *Date        `json:"customer_at_supply_address_from_date,omitempty"`
	MeterPoints                     []MeterPoint `json:"meter_points" dataimport:"max=10"`
}

// MeterPoint: fuel is required (the contract lists it without a default and
// a meter point cannot be created without knowing its fuel).
type MeterPoint struct {
	MPXN            string      `json:"mpxn" dataimport:"required"`
	Fuel            Fuel        `json:"fuel" dataimport:"required"`
	SupplyStartDate Date        `json:"supply_start_date" dataimport:"required"`
	SupplyEndDate   *Date       `json:"supply_end_date,omitempty"`
	Agreements      []Agreement `json:"agreements,omitempty" dataimport:"max=20"`
	// Meter data (meters.go), all optional.
	ProfileClass               *int             `json:"profile_class,omitempty"`
	SSC                        *string          `json:"ssc,omitempty"`
	EstimatedAnnualConsumption *decimal.Decimal `json:"estimated_annual_consumption,omitempty"`
	Meters                     []Meter          `json:"meters,omitempty" dataimport:"max=20"`
}

// Agreement: valid_to is inclusive; nil means open-ended. It names a
// catalogue tariff (preferred) or a product; one of the two is required.
type Agreement struct {
	TariffCode  *string `json:"tariff_code,omitempty"`
	ProductCode *string `json:"product_code,omitempty"`
	ValidFrom   Date    `json:"valid_from" dataimport:"required"`
	ValidTo     *Date   `json:"valid_to,omitempty"`
}

type MetadataItem struct {
	Key   string `json:"key" dataimport:"required"`
	Value string `json:"value" dataimport:"required"`
}

type Reference struct {
	Namespace string `json:"namespace" dataimport:"required"`
	Value     string `json:"value" dataimport:"required"`
}

// Note is interface §2.4, used inside the account and by the notes endpoint.
type Note struct {
	Body          *string            `json:"body,omitempty"`
	DocumentPaths []NoteDocumentPath `json:"document_paths,omitempty" dataimport:"max=20"`
	CreatedAt     *DateTime          `json:"created_at,omitempty"`
	IsPinned      *bool              `json:"is_pinned,omitempty"`
	UnpinAt       *DateTime          `json:"unpin_at,omitempty"`
}

type NoteDocumentPath struct {
	DocumentPath string `json:"document_path" dataimport:"required"`
}

// Transaction is interface §2.5. Only the four fields every type needs are
// required at bind time; the per-type rules live in ValidateTransactions.
type Transaction struct {
	TransactionID   string             `json:"transaction_id" dataimport:"required"`
	TransactionDate Date               `json:"transaction_date" dataimport:"required"`
	Amount          Money              `json:"amount" dataimport:"required"`
	Type            TransactionType    `json:"type" dataimport:"required"`
	Reason          *TransactionReason `json:"reason,omitempty"`
	DisplayNote     *string            `json:"display_note,omitempty"`
	Note            *string            `json:"note,omitempty"`
	Reference       *string            `json:"reference,omitempty"`
	PaymentType     *PaymentType       `json:"payment_type,omitempty"`
	ProductCode     *string            `json:"product_code,omitempty"`
	LineItems       []LineItem         `json:"line_items,omitempty" dataimport:"max=20"`
	TaxItems        []TaxItem          `json:"tax_items,omitempty" dataimport:"max=10"`
}

// LineItem: dates and net_amount are needed for the supply-charge arithmetic;
// number_of_units becomes required when price_per_unit is given.
type LineItem struct {
	RateBand      *RateBand         `json:"rate_band,omitempty"`
	StartDate     Date              `json:"start_date" dataimport:"required"`
	EndDate       Date              `json:"end_date" dataimport:"required"`
	NumberOfUnits *decimal.Decimal  `json:"number_of_units,omitempty"`
	NetAmount     Money             `json:"net_amount" dataimport:"required"`
	PricePerUnit  *decimal.Decimal  `json:"price_per_unit,omitempty"`
	Units         []decimal.Decimal `json:"units,omitempty" dataimport:"max=10"`
}

// TaxItem: CONTRACT §7, all five fields required.
type TaxItem struct {
	Amount     Money           `json:"amount" dataimport:"required"`
	TaxType    TaxType         `json:"tax_type" dataimport:"required"`
	ValueTaxed Money           `json:"value_taxed" dataimport:"required"`
	Rate       decimal.Decimal `json:"rate" dataimport:"required"`
	UnitType   UnitType        `json:"unit_type" dataimport:"required"`
}

// Accessors return the effective value of defaulted fields, whether or not
// ValidateAccount has filled them yet.

func (a *Account) Type() AccountType {
	if a.AccountType == nil {
		return AccountTypeDomestic
	}
	return *a.AccountType
}

func (a *Account) IsUnknownOccupier() bool { return a.UnknownOccupier != nil && *a.UnknownOccupier }

func (a *Account) Communication() CommunicationPreference {
	if a.CommunicationPreference == nil {
		return CommunicationOnline
	}
	return *a.CommunicationPreference
}

// OpeningBalance is transfer_balance, 0 when absent.
func (a *Account) OpeningBalance() decimal.Decimal {
	if a.TransferBalance == nil {
		return decimal.Zero
	}
	return a.TransferBalance.Decimal
}

// FirstStatementPeriod is the first open statement (CONTRACT §5): it starts
// the day after last_statement_closing_date, else on the creation day, and
// ends on next_bill_due_date, else one month after the start less one day.
func (a *Account) FirstStatementPeriod(creationDay Date) (from, to Date) {
	from = creationDay
	if a.LastStatementClosingDate != nil {
		from = a.LastStatementClosingDate.AddDays(1)
	}
	to = from.AddMonths(1).AddDays(-1)
	if a.NextBillDueDate != nil {
		to = *a.NextBillDueDate
	}
	return from, to
}

// MeterPointCount is the number of meter points across all supply addresses.
func (a *Account) MeterPointCount() int {
	n := 0
	for _, sa := range a.SupplyAddresses {
		n += len(sa.MeterPoints)
	}
	return n
}

// Emails lists the customers' non-empty e-mail addresses (welcome e-mails).
func (a *Account) Emails() []string {
	var out []string
	for _, c := range a.Customers {
		if c.Email != nil && *c.Email != "" && !slices.Contains(out, *c.Email) {
			out = append(out, *c.Email)
		}
	}
	return out
}
