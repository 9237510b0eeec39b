package dataimport

import (
	"fmt"
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
// itself (its supplier decides the phone region), in one parse of the body.
// An error from rules (an unknown supplier, say) wins over field errors.
func DecodeAccountFor(body []byte, rules func(*Account) (AccountRules, error)) (*Account, error) {
	var rulesErr error
	a, err := Decode(body, CodeAccountFailedValidation, "Account failed validation.", func(a *Account) []FieldError {
		r, err := rules(a)
		if err != nil {
			rulesErr = err
			return nil
		}
		return ValidateAccount(a, r)
	})
	if rulesErr != nil {
		return nil, rulesErr
	}
	return a, err
}

// Decode is DecodeStrict followed by a validator, for any request body. code
// is the top-level code of a validation failure (CodeInvalidPayload for
// bodies other than the account).
func Decode[T any](body []byte, code, detail string, validate func(*T) []FieldError) (*T, error) {
	v := new(T)
	bindErrs, err := DecodeStrict(body, v)
	if err != nil {
		return nil, err
	}
	if len(bindErrs) == 1 && bindErrs[0].Attr == CodeNonFieldErrors {
		return nil, ValidationError(code, detail, bindErrs) // not even an object
	}
	var ruleErrs []FieldError
	if validate != nil {
		ruleErrs = validate(v)
	}
	if all := MergeFieldErrors(bindErrs, ruleErrs); len(all) > 0 {
		return nil, ValidationError(code, detail, capErrors(all))
	}
	return v, nil
}

// MaxReportedErrors bounds one error response. Every real payload reports
// all its errors; a hostile body with a million bad items does not get a
// hundred-megabyte answer.
const MaxReportedErrors = 1000

func capErrors(errs []FieldError) []FieldError {
	if len(errs) <= MaxReportedErrors {
		return errs
	}
	return append(errs[:MaxReportedErrors:MaxReportedErrors], FieldError{
		Detail: fmt.Sprintf("Too many errors; only the first %d are reported.", MaxReportedErrors),
		Code:   CodeTooManyErrors,
		Attr:   CodeNonFieldErrors,
	})
}

// derivedCodes are rule errors computed from several sibling values. When
// any sibling failed to bind, the rule saw a zero value and its verdict is
// noise, so MergeFieldErrors drops it.
var derivedCodes = map[string]bool{
	CodeSupplyChargeAmountMismatch:         true,
	CodeLineItemNetAmountMismatch:          true,
	CodeGapsOrOverlapsInAgreementDates:     true,
	CodeStartDateLaterThanEndDate:          true,
	CodeNoteUnpinAtEarlierThanCreationDate: true,
	CodeBalanceOutOfRange:                  true,
}

// MergeFieldErrors combines binder errors with validator errors without
// reporting one problem twice: a validator error at (or under) an attr the
// binder already rejected is dropped (a missing key must not also be
// "blank"), and so is a derived rule error whose object has a binding error.
// Binder errors come first, in document order.
func MergeFieldErrors(bindErrs, ruleErrs []FieldError) []FieldError {
	if len(bindErrs) == 0 {
		return ruleErrs
	}
	failed := make(map[string]bool, len(bindErrs))    // attrs the binder rejected
	ancestors := make(map[string]bool, len(bindErrs)) // strict ancestors of those
	for _, e := range bindErrs {
		if e.Code == CodeUnknownField {
			continue // an extra key leaves every known value intact
		}
		failed[e.Attr] = true
		for i := 0; i < len(e.Attr); i++ {
			if e.Attr[i] == '.' {
				ancestors[e.Attr[:i]] = true
			}
		}
	}
	out := append([]FieldError(nil), bindErrs...)
	for _, e := range ruleErrs {
		if coveredBy(e, failed, ancestors) {
			continue
		}
		out = append(out, e)
	}
	return out
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
	Notes                 []Note `json:"notes" dataimport:"required"`
}

// Validate checks the request; now fills missing created_at (CONTRACT §7).
func (r *NotesRequest) Validate(now time.Time) []FieldError {
	c := &collector{}
	c.requiredString("import_supplier", r.ImportSupplier, defaultMaxLength)
	c.requiredString("external_account_number", r.ExternalAccountNumber, maxExternalAccountNumber)
	for i := range r.Notes {
		c.addAll(ValidateNote(&r.Notes[i], indexPath("notes", i), now))
	}
	return c.errs
}

// TransactionsRequest is the body of POST /v1/data-import/transactions/create/.
type TransactionsRequest struct {
	ImportSupplier        string        `json:"import_supplier" dataimport:"required"`
	ExternalAccountNumber string        `json:"external_account_number" dataimport:"required"`
	Transactions          []Transaction `json:"transactions" dataimport:"required"`
}

func (r *TransactionsRequest) Validate() []FieldError {
	c := &collector{}
	c.requiredString("import_supplier", r.ImportSupplier, defaultMaxLength)
	c.requiredString("external_account_number", r.ExternalAccountNumber, maxExternalAccountNumber)
	c.addAll(ValidateTransactions(r.Transactions, "transactions"))
	return c.errs
}
