package dataimport

import (
	"fmt"

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
