package dataimport

import (
	"fmt"
	"slices"
)

// HistoricalStatement is interface 2.8: a statement issued before the
// migration, kept as a reference to its PDF (CONTRACT §7).
type HistoricalStatement struct {
	StatementID        string  `json:"statement_id" dataimport:"required"`
	BillPeriodFromDate Date    `json:"bill_period_from_date" dataimport:"required"`
	BillPeriodToDate   Date    `json:"bill_period_to_date" dataimport:"required"`
	IssuedDate         *Date   `json:"issued_date,omitempty"`
	Number             *string `json:"number,omitempty"`
	GrossAmount        *Money  `json:"gross_amount,omitempty"`
	StatementPath      *string `json:"statement_path,omitempty"`
}

// StatementsRequest is the body of POST /v1/data-import/historical-statements/create/.
type StatementsRequest struct {
	ImportSupplier        string                `json:"import_supplier" dataimport:"required"`
	ExternalAccountNumber string                `json:"external_account_number" dataimport:"required"`
	Statements            []HistoricalStatement `json:"statements" dataimport:"required,max=1000"`
}

// Validate applies CONTRACT §7 to the request. today is the current date
// (UTC) for the "period end not in the future" rule; zero skips that rule.
// A statement_id used twice in the request is refused here; one already on
// the account is refused by the store with the same code.
func (r *StatementsRequest) Validate(today Date) []FieldError {
	c := &collector{}
	c.requiredString(field("import_supplier"), r.ImportSupplier, defaultMaxLength)
	c.identifier(field("external_account_number"), r.ExternalAccountNumber)
	firstUse := map[string]attr{} // statement_id -> attr of its first use
	for i := range r.Statements {
		if c.full() {
			break
		}
		s := &r.Statements[i]
		it := itemOf("statements", i)
		id := it.field("statement_id")
		c.requiredString(id, s.StatementID, defaultMaxLength)
		c.unique(id, s.StatementID, firstUse, CodeHistoricalStatementAlreadyExists, "Statement ID %q is also used by %s.")
		to := it.field("bill_period_to_date")
		if !s.BillPeriodFromDate.IsZero() && !s.BillPeriodToDate.IsZero() && s.BillPeriodToDate.Before(s.BillPeriodFromDate) {
			c.addAt(to, CodeStartDateLaterThanEndDate, "bill_period_to_date may not be before bill_period_from_date.")
		}
		if !today.IsZero() && s.BillPeriodToDate.After(today) {
			c.addAt(to, CodeHistoricalStatementPeriodEndInFuture, "A historical statement's period may not end in the future.")
		}
		c.notFuture(it.field("issued_date"), s.IssuedDate, today, false)
		c.optionalString(it.field("number"), s.Number, defaultMaxLength)
		if s.GrossAmount != nil {
			c.money(it.field("gross_amount"), *s.GrossAmount)
			c.storedMoney(it.field("gross_amount"), *s.GrossAmount)
		}
		if s.StatementPath != nil {
			c.documentPath(it.field("statement_path"), *s.StatementPath, true)
		}
	}
	return c.list()
}

// StatementsAlreadyExist is the 400 for statement_ids the account already
// has: top-level code historical_statement_already_exists, one field error
// per offending statement of the request (ids maps request index → id).
func StatementsAlreadyExist(ids map[int]string) *Error {
	idx := make([]int, 0, len(ids))
	for i := range ids {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	errs := make([]FieldError, len(idx))
	for k, i := range idx {
		errs[k] = FieldError{Attr: joinPath(indexPath("statements", i), "statement_id"), Code: CodeHistoricalStatementAlreadyExists,
			Detail: fmt.Sprintf("The account already has a historical statement with ID %q.", ids[i])}
	}
	return ValidationError(CodeHistoricalStatementAlreadyExists, "The account already has some of these historical statements; nothing was stored.", errs)
}
