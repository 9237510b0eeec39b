package dataimport

import (
	"strings"
	"time"
)

// DecodeAccount is the one call the HTTP layer and the worker make for an
// account body: strict decode, then ValidateAccount. It returns the
// normalised account, or a *Error: CodeParseError for a body that is not
// JSON, CodeAccountFailedValidation with every field error otherwise.
func DecodeAccount(body []byte, rules AccountRules) (*Account, error) {
	return Decode(body, CodeAccountFailedValidation, "Account failed validation.",
		func(a *Account) []FieldError { return ValidateAccount(a, rules) })
}

// DecodeAccountFor is DecodeAccount with rules that depend on the account
// itself (its supplier decides the phone region, market and catalogue), in
// one parse of the body. An error from rules (an unknown supplier, say)
// wins over field errors. It is the one entry point of the server's
// validate/stage paths and of migrator convert --validate, so the two
// cannot disagree: the catalogue rules run (when rules.Catalogue is set)
// only on an account that passed every other rule, as the server has
// always answered.
func DecodeAccountFor(body []byte, rules func(*Account) (AccountRules, error)) (*Account, error) {
	var rulesErr error
	var cat CatalogueFunc
	a, err := Decode(body, CodeAccountFailedValidation, "Account failed validation.", func(a *Account) []FieldError {
		r, err := rules(a)
		if err != nil {
			rulesErr = err
			return nil
		}
		cat = r.Catalogue
		return ValidateAccount(a, r)
	})
	if rulesErr != nil {
		return nil, rulesErr
	}
	if err == nil && cat != nil {
		if err = CheckAccountCatalogue(a, cat); err != nil {
			return nil, err
		}
	}
	return a, err
}

// Decode is DecodeStrict followed by a validator, for any request body. code
// is the top-level code of a validation failure (CodeInvalidPayload for
// bodies other than the account).
func Decode[T any](body []byte, code, detail string, validate func(*T) []FieldError) (*T, error) {
	v := new(T)
	var bound collector
	notObject, err := decodeStrict(body, v, &bound)
	if err != nil {
		return nil, err
	}
	if notObject {
		return nil, ValidationError(code, detail, bound.list())
	}
	var ruleErrs []FieldError
	if validate != nil {
		ruleErrs = validate(v)
	}
	if all := MergeFieldErrors(bound.list(), ruleErrs); len(all) > 0 {
		return nil, ValidationError(code, detail, all)
	}
	return v, nil
}

// derivedCodes are rule errors computed from several sibling values. When
// any sibling failed to bind, the rule saw a zero value and its verdict is
// noise, so MergeFieldErrors drops it.
var derivedCodes = map[string]bool{
	CodeSupplyChargeAmountMismatch:         true,
	CodeLineItemNetAmountMismatch:          true,
	CodeGapsOrOverlapsInAgreementDates:     true,
	CodeGapsOrOverlapsInRates:              true,
	CodeStartDateLaterThanEndDate:          true,
	CodeNoteUnpinAtEarlierThanCreationDate: true,
	CodeBalanceOutOfRange:                  true,
}

// MergeFieldErrors combines binder errors with validator errors without
// reporting one problem twice: a validator error at (or under) an attr the
// binder already rejected is dropped (a missing key must not also be
// "blank"), and so is a derived rule error whose object has a binding error.
// Binder errors come first, in document order. The result is capped like
// every error list (at most MaxReportedErrors, then too_many_errors).
func MergeFieldErrors(bindErrs, ruleErrs []FieldError) []FieldError {
	var out collector
	if len(bindErrs) == 0 {
		out.addAll(ruleErrs)
		return out.list()
	}
	failed := make(map[string]bool, len(bindErrs))    // attrs the binder rejected
	ancestors := make(map[string]bool, len(bindErrs)) // strict ancestors of those
	for _, e := range bindErrs {
		if e.Code == CodeUnknownField || e.Code == CodeTooManyErrors {
			continue // an extra key leaves every known value intact
		}
		failed[e.Attr] = true
		for i := 0; i < len(e.Attr); i++ {
			if e.Attr[i] == '.' {
				ancestors[e.Attr[:i]] = true
			}
		}
	}
	out.addAll(bindErrs)
	for _, e := range ruleErrs {
		if e.Code == CodeTooManyErrors || !coveredBy(e, failed, ancestors) {
			out.addError(e)
		}
	}
	return out.list()
}

func coveredBy(e FieldError, failed, ancestors map[string]bool) bool {
	// e.Attr itself or any of its ancestors was rejected by the binder.
	for a := e.Attr; ; {
		if failed[a] {
			return true
		}
		i := strings.LastIndexByte(a, '.')
		if i < 0 {
			break
		}
		a = a[:i]
	}
	if derivedCodes[e.Code] {
		if i := strings.LastIndexByte(e.Attr, '.'); i > 0 && ancestors[e.Attr[:i]] {
			return true
		}
		if ancestors[e.Attr] { // rule reported on the container itself
			return true
		}
	}
	return false
}

// NotesRequest is the body of POST /v1/data-import/notes/create/.
type NotesRequest struct {
	ImportSupplier        string `json:"import_supplier" dataimport:"required"`
	ExternalAccountNumber string `json:"external_account_number" dataimport:"required"`
	Notes                 []Note `json:"notes" dataimport:"required,max=1000"`
}

// Validate checks the request; now fills missing created_at (CONTRACT §7).
func (r *NotesRequest) Validate(now time.Time) []FieldError {
	c := &collector{}
	c.requiredString(field("import_supplier"), r.ImportSupplier, defaultMaxLength)
	c.identifier(field("external_account_number"), r.ExternalAccountNumber)
	for i := range r.Notes {
		if c.full() {
			break
		}
		validateNote(c, &r.Notes[i], itemOf("notes", i), now)
	}
	return c.list()
}

// TransactionsRequest is the body of POST /v1/data-import/transactions/create/.
type TransactionsRequest struct {
	ImportSupplier        string        `json:"import_supplier" dataimport:"required"`
	ExternalAccountNumber string        `json:"external_account_number" dataimport:"required"`
	Transactions          []Transaction `json:"transactions" dataimport:"required,max=500"`
}

func (r *TransactionsRequest) Validate() []FieldError {
	c := &collector{}
	c.requiredString(field("import_supplier"), r.ImportSupplier, defaultMaxLength)
	c.identifier(field("external_account_number"), r.ExternalAccountNumber)
	validateTransactions(c, r.Transactions, "transactions")
	return c.list()
}
