package dataimport

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// AccountRules carries what account validation needs from outside the
// payload, so this package does no I/O and never reads the clock.
type AccountRules struct {
	// PhoneRegion is the supplier's phone region (ISO 3166 alpha-2, "GB").
	// Empty accepts only numbers written with a +country code.
	PhoneRegion string
	// Today is the supplier's current date for the "not in the future"
	// rules. Zero skips those rules.
	Today Date
	// Now, when non-zero, fills notes' missing created_at. Validate and
	// stage leave it zero so the default is the creation time, chosen by the
	// worker.
	Now time.Time
	// Market is the supplier's market rule set (CONTRACT §10); nil is
	// NONE, the generic rules.
	Market Market
	// PaymentVendors are the configured payment vendors: a payment
	// instruction naming another is refused (none configured: every one
	// is). SkipPaymentVendors leaves the vendor unchecked, for callers that
	// cannot know the configuration (offline conversion); the API and the
	// worker always check.
	PaymentVendors     []string
	SkipPaymentVendors bool
	// Catalogue loads the catalogue entries an account names, for a
	// supplier that requires products (CONTRACT §10); nil skips the
	// catalogue rules. The server reads the database, migrator convert a
	// products file: DecodeAccountFor applies the rules the same way to both.
	Catalogue CatalogueFunc
}

const (
	maxExternalAccountNumber = 128 // CONTRACT §5
	maxPostcode              = 16  // CONTRACT §5
)

// ValidateAccount applies every rule of CONTRACT §5 to a (typically freshly
// decoded) account, collecting all errors with dot-path attrs, and normalises
// the account in place: defaults filled, phone numbers in E.164, money with
// two places. It is deterministic and safe to run again on its own output
// (stage and the worker do).
func ValidateAccount(a *Account, opts AccountRules) []FieldError {
	c := &collector{}
	validateAccount(c, a, opts)
	return c.list()
}

func validateAccount(c *collector, a *Account, opts AccountRules) {
	c.requiredString(field("import_supplier"), a.ImportSupplier, defaultMaxLength)
	c.identifier(field("external_account_number"), a.ExternalAccountNumber)

	if a.AccountType == nil {
		a.AccountType = ptr(AccountTypeDomestic)
	} else {
		choice(c, field("account_type"), *a.AccountType, AccountTypes)
	}
	if a.UnknownOccupier == nil {
		a.UnknownOccupier = ptr(false)
	}
	if a.CommunicationPreference == nil {
		a.CommunicationPreference = ptr(CommunicationOnline)
	} else {
		choice(c, field("communication_preference"), *a.CommunicationPreference, CommunicationPreferences)
	}
	choice(c, field("sales_channel"), a.SalesChannel, SalesChannels)
	c.optionalString(field("sales_subchannel"), a.SalesSubchannel, defaultMaxLength)
	c.notFuture(field("date_of_sale"), a.DateOfSale, opts.Today, false)

	validateBilling(c, a, opts.Market)
	validateStatementDates(c, a, opts.Today)

	if a.TransferBalance == nil {
		a.TransferBalance = &Money{}
	}
	c.money(field("transfer_balance"), *a.TransferBalance)
	c.storedMoney(field("transfer_balance"), *a.TransferBalance)

	validateCustomers(c, a, opts)
	validateSupplyAddresses(c, a, opts)
	validateMetadata(c, a.Metadata)
	validateReferences(c, a.References)

	for i := range a.Notes {
		if c.full() {
			return
		}
		validateNote(c, &a.Notes[i], itemOf("notes", i), opts.Now)
	}
	validateTransactions(c, a.CurrentStatementTransactions, "current_statement_transactions")
	validateOpeningBalance(c, a)
	validatePaymentSchedules(c, a.PaymentSchedules)
	validateAccountPaymentInstructions(c, a.PaymentInstructions, opts)
}

func ptr[T any](v T) *T { return &v }

// Field names of the numbered address lines, so no path is formatted
// unless it is reported.
var (
	billingLines = []string{"billing_address1", "billing_address2", "billing_address3", "billing_address4", "billing_address5"}
	supplyLines  = []string{"supply_address2", "supply_address3", "supply_address4", "supply_address5"}
)

func given(s *string) bool { return s != nil && *s != "" }

func validateBilling(c *collector, a *Account, m Market) {
	c.optionalString(field("billing_name"), a.BillingName, defaultMaxLength)
	lines := []*string{a.BillingAddress1, a.BillingAddress2, a.BillingAddress3, a.BillingAddress4, a.BillingAddress5}
	anyLine := false
	for i, l := range lines {
		c.optionalString(field(billingLines[i]), l, defaultMaxLength)
		anyLine = anyLine || given(l)
	}
	c.optionalString(field("billing_postcode"), a.BillingPostcode, maxPostcode)
	if given(a.BillingPostcode) {
		c.marketPostcode(field("billing_postcode"), *a.BillingPostcode, m)
	}
	c.email(field("billing_email"), a.BillingEmail)
	// A billing address is all or nothing: with any line given, the first
	// line and the postcode are what a letter needs to arrive.
	if anyLine {
		if !given(a.BillingAddress1) {
			c.add("billing_address1", CodeInvalidAddress, "billing_address1 is required when a billing address is given.")
		}
		if !given(a.BillingPostcode) {
			c.add("billing_postcode", CodeInvalidAddress, "billing_postcode is required when a billing address is given.")
		}
	}
}

// validateStatementDates: the first open statement runs from the day after
// last_statement_closing_date (else from the creation day, which is today)
// to next_bill_due_date, and the database refuses a period that ends before
// it starts. A zero today (caller did not say) skips the second rule.
func validateStatementDates(c *collector, a *Account, today Date) {
	switch {
	case a.NextBillDueDate == nil:
	case a.LastStatementClosingDate != nil:
		if !a.NextBillDueDate.After(*a.LastStatementClosingDate) {
			c.add("next_bill_due_date", CodeStartDateLaterThanEndDate,
				"next_bill_due_date must be after last_statement_closing_date.")
		}
	case !today.IsZero() && a.NextBillDueDate.Before(today):
		c.add("next_bill_due_date", CodeStartDateLaterThanEndDate,
			"next_bill_due_date may not be in the past when last_statement_closing_date is not given: the first open statement starts on the day the account is created.")
	}
}

func validateCustomers(c *collector, a *Account, opts AccountRules) {
	if a.IsUnknownOccupier() {
		if len(a.Customers) > 0 {
			c.add("customers", CodeCustomerWithUnknownOccupier, "An unknown-occupier account may not have customers.")
		}
	} else if len(a.Customers) == 0 {
		c.add("customers", CodeRequired, "At least one customer is required unless unknown_occupier is true.")
	}
	for i := range a.Customers {
		if c.full() {
			return
		}
		validateCustomer(c, &a.Customers[i], itemOf("customers", i), a.Type(), opts)
		validatePSR(c, a.Customers[i].PSR, itemOf("customers", i).field("psr").String(), opts)
	}
}

func validateCustomer(c *collector, cu *Customer, it item, accountType AccountType, opts AccountRules) {
	c.requiredString(it.field("given_name"), cu.GivenName, defaultMaxLength)
	if accountType == AccountTypeDomestic && !given(cu.FamilyName) {
		c.addAt(it.field("family_name"), CodeCustomerFamilyNameRequired, "family_name is required for DOMESTIC accounts.")
	} else {
		c.optionalString(it.field("family_name"), cu.FamilyName, defaultMaxLength)
	}
	if cu.Title != nil && *cu.Title != "" && !slices.Contains(Titles, *cu.Title) {
		c.addAt(it.field("title"), CodeInvalidChoice, fmt.Sprintf("%q is not a valid choice.", *cu.Title))
	}
	c.optionalString(it.field("salutation"), cu.Salutation, defaultMaxLength)
	c.email(it.field("email"), cu.Email)
	c.phone(it.field("mobile"), cu.Mobile, opts.PhoneRegion)
	c.phone(it.field("landline"), cu.Landline, opts.PhoneRegion)
	c.notFuture(it.field("date_of_birth"), cu.DateOfBirth, opts.Today, true)
	if cu.CustomerPreferences == nil {
		cu.CustomerPreferences = &CustomerPreferences{}
	}
	if namedTheOccupier(cu) {
		c.add(it.String(), CodeCustomerNamedTheOccupier, `A customer may not be named "The Occupier"; use unknown_occupier instead.`)
	}
}

// namedTheOccupier catches "The Occupier" in either name field or spread
// across both, ignoring case and runs of whitespace.
func namedTheOccupier(cu *Customer) bool {
	norm := func(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }
	family := ""
	if cu.FamilyName != nil {
		family = *cu.FamilyName
	}
	const name = "the occupier"
	// In ASCII text, lowercasing and folding whitespace keep every other
	// byte, and the name has 11 of them: names of other lengths are
	// answered without building the three normalised strings.
	if g, ok := asciiNonSpace(cu.GivenName); ok {
		if f, ok := asciiNonSpace(family); ok && g != 11 && f != 11 && g+f != 11 {
			return false
		}
	}
	return norm(cu.GivenName) == name || norm(family) == name || norm(cu.GivenName+" "+family) == name
}

// asciiNonSpace counts the bytes of s that are not white space
// (unicode.IsSpace); ok is false when s is not all ASCII.
func asciiNonSpace(s string) (n int, ok bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			return 0, false
		case c != ' ' && (c < '\t' || c > '\r'): // \t \n \v \f \r
			n++
		}
	}
	return n, true
}

func validateSupplyAddresses(c *collector, a *Account, opts AccountRules) {
	if a.IsUnknownOccupier() {
		if len(a.SupplyAddresses) > 1 {
			c.add("supply_addresses", CodeOccupierAccountWithMultipleAddresses, "An unknown-occupier account may have at most one supply address.")
		}
	} else if len(a.SupplyAddresses) == 0 {
		c.add("supply_addresses", CodeRequired, "At least one supply address is required unless unknown_occupier is true.")
	}
	mpxnSeen := map[string]attr{} // mpxn -> attr of its first use
	serials := map[string]attr{}  // meter serial -> attr of its first use
	for i := range a.SupplyAddresses {
		if c.full() {
			return
		}
		sa := &a.SupplyAddresses[i]
		it := itemOf("supply_addresses", i)
		c.requiredString(it.field("supply_address1"), sa.SupplyAddress1, defaultMaxLength)
		for j, l := range []*string{sa.SupplyAddress2, sa.SupplyAddress3, sa.SupplyAddress4, sa.SupplyAddress5} {
			c.optionalString(it.field(supplyLines[j]), l, defaultMaxLength)
		}
		c.requiredString(it.field("supply_postcode"), sa.SupplyPostcode, maxPostcode)
		if sa.SupplyPostcode != "" {
			c.marketPostcode(it.field("supply_postcode"), sa.SupplyPostcode, opts.Market)
		}
		if len(sa.MeterPoints) == 0 {
			c.addAt(it.field("meter_points"), CodeRequired, "At least one meter point is required.")
			continue
		}
		meterPoints := it.field("meter_points").String()
		for j := range sa.MeterPoints {
			if c.full() {
				return
			}
			validateMeterPoint(c, &sa.MeterPoints[j], itemOf(meterPoints, j), mpxnSeen)
			validateMeterData(c, &sa.MeterPoints[j], itemOf(meterPoints, j), serials, opts)
		}
	}
}

func validateMeterPoint(c *collector, mp *MeterPoint, it item, mpxnSeen map[string]attr) {
	mpxn := it.field("mpxn")
	c.requiredString(mpxn, mp.MPXN, defaultMaxLength)
	c.unique(mpxn, mp.MPXN, mpxnSeen, CodeDuplicateMPXN, "MPxN %q is already used by %s.")
	choice(c, it.field("fuel"), mp.Fuel, Fuels)
	if mp.SupplyEndDate != nil && !mp.SupplyStartDate.IsZero() && mp.SupplyEndDate.Before(mp.SupplyStartDate) {
		c.addAt(it.field("supply_end_date"), CodeStartDateLaterThanEndDate, "supply_end_date may not be before supply_start_date.")
	}
	if len(mp.Agreements) > 0 {
		validateAgreements(c, mp.Agreements, it.field("agreements").String())
	}
}

// validateAgreements checks that a meter point's agreements tile time.
// valid_to is INCLUSIVE (the last day the product applies), so agreement
// B follows A exactly when B.valid_from == A.valid_to + 1 day; anything else
// is a gap or an overlap. Agreements are ordered by valid_from first (the
// payload order does not matter). Only the last one may be open-ended
// (valid_to absent).
func validateAgreements(c *collector, ags []Agreement, path string) {
	order := make([]int, 0, len(ags))
	sortable := true
	for k := range ags {
		if c.full() {
			return
		}
		ag := &ags[k]
		it := itemOf(path, k)
		if !given(ag.TariffCode) && !given(ag.ProductCode) {
			c.addAt(it.field("product_code"), CodeRequired, "tariff_code (preferred) or product_code is required.")
		}
		c.optionalString(it.field("tariff_code"), ag.TariffCode, defaultMaxLength)
		c.optionalString(it.field("product_code"), ag.ProductCode, defaultMaxLength)
		if ag.ValidTo != nil && !ag.ValidFrom.IsZero() && ag.ValidTo.Before(ag.ValidFrom) {
			c.addAt(it.field("valid_to"), CodeStartDateLaterThanEndDate, "valid_to may not be before valid_from.")
		}
		// A zero valid_from failed to bind (already reported); ordering
		// would be meaningless without it.
		sortable = sortable && !ag.ValidFrom.IsZero()
		order = append(order, k)
	}
	if !sortable {
		return
	}
	slices.SortStableFunc(order, func(x, y int) int { return ags[x].ValidFrom.Compare(ags[y].ValidFrom) })
	for n := 1; n < len(order); n++ {
		prev, next := ags[order[n-1]], ags[order[n]]
		if prev.ValidTo == nil || next.ValidFrom != prev.ValidTo.AddDays(1) {
			c.add(path, CodeGapsOrOverlapsInAgreementDates, fmt.Sprintf(
				"Agreements must be consecutive: agreement %d must start the day after agreement %d ends (valid_to is inclusive; only the last may be open-ended).",
				order[n], order[n-1]))
			return // one error per meter point is enough to act on
		}
	}
}

func validateMetadata(c *collector, items []MetadataItem) {
	seen := map[string]bool{}
	for i, m := range items {
		if c.full() {
			return
		}
		it := itemOf("metadata", i)
		c.requiredString(it.field("key"), m.Key, defaultMaxLength)
		c.maxLength(it.field("value"), m.Value, defaultMaxLength)
		if m.Key == "" {
			continue
		}
		if seen[m.Key] {
			c.addAt(it.field("key"), CodeMetadataHasDuplicateKeys, fmt.Sprintf("Metadata key %q is given more than once.", m.Key))
		}
		seen[m.Key] = true
	}
}

func validateReferences(c *collector, refs []Reference) {
	seen := map[[2]string]bool{}
	for i, r := range refs {
		if c.full() {
			return
		}
		it := itemOf("references", i)
		c.requiredString(it.field("namespace"), r.Namespace, defaultMaxLength)
		c.requiredString(it.field("value"), r.Value, defaultMaxLength)
		key := [2]string{r.Namespace, r.Value}
		if r.Namespace == "" || r.Value == "" {
			continue
		}
		if seen[key] {
			c.add(it.String(), CodeDuplicateReferences, fmt.Sprintf("Reference %s/%s is given more than once.", r.Namespace, r.Value))
		}
		seen[key] = true
	}
}
