package dataimport

import (
	"fmt"
	"strings"

	"github.com/shopspring/decimal"
)

// BalanceEffect is the signed change a transaction makes to the account
// balance (CONTRACT §7): charges and repayments raise it, credits and
// payments lower it.
func (t *Transaction) BalanceEffect() decimal.Decimal {
	switch t.Type {
	case TransactionCredit, TransactionPayment:
		return t.Amount.Neg()
	default:
		return t.Amount.Decimal
	}
}

// PlaceInPeriod moves d to the nearest day of [from, to]; moved reports
// whether it had to.
func PlaceInPeriod(d, from, to Date) (placed Date, moved bool) {
	switch {
	case d.Before(from):
		return from, true
	case d.After(to):
		return to, true
	}
	return d, false
}

// MovedDescription explains on a transaction why its date differs from the
// one the partner sent.
func MovedDescription(original, placed Date) string {
	return fmt.Sprintf("Transaction date moved from %s to %s to fall within the open statement period.", original, placed)
}

// MovedNoteBody is the one pinned note added to an account when transactions
// had to be moved into its open statement.
func MovedNoteBody(count int, from, to Date) string {
	return fmt.Sprintf("%d imported transaction(s) were dated outside the open statement period %s to %s and were moved into it; see each transaction's description.", count, from, to)
}

// MovedNote is the pinned note MovedNoteBody describes: one per request (or
// created account) that had transactions moved, however many moved.
func MovedNote(count int, from, to Date) Note {
	body := MovedNoteBody(count, from, to)
	pinned := true
	return Note{Body: &body, IsPinned: &pinned}
}

// Transaction result statuses (interface 2.6).
const (
	TransactionAddedToAccount   = "TRANSACTION_ADDED_TO_ACCOUNT"
	TransactionAlreadyExists    = "TRANSACTION_ALREADY_EXISTS"
	TransactionImportErrorState = "TRANSACTION_IMPORT_ERROR"
)

// StoredTransaction is a transaction as it was stored: the embedded
// transaction carries the date it was booked on; when that had to move into
// the open statement, OriginalTransactionDate is the date the partner sent
// and Description says so. It is the transaction_data of a 201 result.
type StoredTransaction struct {
	Transaction
	OriginalTransactionDate *Date  `json:"original_transaction_date,omitempty"`
	Description             string `json:"description,omitempty"`
}

// Moved reports whether the transaction's date was changed.
func (s *StoredTransaction) Moved() bool { return s.OriginalTransactionDate != nil }

// TransactionImportError is the transactions endpoint's 400 for a
// transaction that cannot be stored (interface 4.2): the interface's body
// {status, error_detail, transaction_data} plus the envelope's code and
// detail (additions the versioning rules allow). tx is the transaction as
// the partner sent it.
func TransactionImportError(detail string, tx Transaction) *Error {
	return &Error{Code: CodeTransactionImportError, Detail: detail, Extra: map[string]any{
		"status":           TransactionImportErrorState,
		"error_detail":     detail,
		"transaction_data": tx,
	}}
}

// ParseBoolFlag reads a boolean query flag (CONTRACT §7): "true"/"false" in
// any case, or "1"/"0". Anything else, the empty string included, is not a
// flag value.
func ParseBoolFlag(s string) (value, ok bool) {
	switch {
	case s == "1" || strings.EqualFold(s, "true"):
		return true, true
	case s == "0" || strings.EqualFold(s, "false"):
		return false, true
	}
	return false, false
}

// TransactionResult is one item of the transactions endpoint's 201 results.
type TransactionResult struct {
	Status          string            `json:"status"`
	TransactionData StoredTransaction `json:"transaction_data"`
}

// Note result statuses (interface 2.7).
const (
	NoteCreationSuccess = "NOTE_CREATION_SUCCESS"
	NoteAlreadyExists   = "NOTE_ALREADY_EXISTS"
)

// NoteResult is one item of the notes endpoint's 201 array.
type NoteResult struct {
	CreatedAt DateTime `json:"created_at"`
	Body      string   `json:"body"`
	Status    string   `json:"status"`
}
