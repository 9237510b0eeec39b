package dataimport

import (
	"fmt"

	"github.com/shopspring/decimal"
)

// An account's balance is stored as numeric(16,2), like every amount, so it
// must stay within ±maxStoredMoney after every transaction. The balance is
// derived, never sent: it is checked where its inputs are known, in
// ValidateAccount (transfer_balance and the opening transactions) and by the
// transactions endpoint (the stored balance and the request's transactions).

// FitsStoredMoney reports whether d fits a numeric(16,2) column once it has
// at most two places (money() refuses more).
func FitsStoredMoney(d decimal.Decimal) bool {
	if c, exp, ok := smallCoefficient(d); ok {
		return absBelowPow10(c, exp, 14)
	}
	return fitsStoredMoneyBig(d)
}

// fitsStoredMoneyBig is FitsStoredMoney for any coefficient (and the
// reference its int64 comparison is tested against).
func fitsStoredMoneyBig(d decimal.Decimal) bool { return d.Abs().Cmp(maxStoredMoney) < 0 }

// BalanceOverflow names the first transaction after which the running
// balance leaves the stored range, and that balance.
type BalanceOverflow struct {
	Index   int
	Balance decimal.Decimal
}

// RunningBalanceOverflow follows the balance from opening through txs, in
// order, and reports the first transaction that takes it out of range. The
// order is the request's: a balance never passes through a value we could
// not store, even if a later credit would bring it back.
func RunningBalanceOverflow(opening decimal.Decimal, txs []Transaction) (BalanceOverflow, bool) {
	b := opening
	for i := range txs {
		b = b.Add(txs[i].BalanceEffect())
		if !FitsStoredMoney(b) {
			return BalanceOverflow{Index: i, Balance: b}, true
		}
	}
	return BalanceOverflow{}, false
}

// Detail says what went wrong, for a field error or error_detail.
func (o BalanceOverflow) Detail() string {
	return fmt.Sprintf("The account balance after this transaction would be %s; a balance must lie between -99999999999999.99 and 99999999999999.99.",
		o.Balance.StringFixed(moneyDecimalPlaces))
}

// FieldError reports the overflow at the amount of the transaction, whose
// list is at path ("transactions", "current_statement_transactions").
func (o BalanceOverflow) FieldError(path string) FieldError {
	return FieldError{Attr: joinPath(indexPath(path, o.Index), "amount"), Code: CodeBalanceOutOfRange, Detail: o.Detail()}
}

// validateOpeningBalance checks the balance an account is created with:
// transfer_balance, then each opening transaction. Values already refused
// on their own are not summed (their errors say enough).
func validateOpeningBalance(c *collector, a *Account) {
	if a.TransferBalance == nil || !FitsStoredMoney(a.TransferBalance.Decimal) {
		return
	}
	for _, t := range a.CurrentStatementTransactions {
		if !t.Amount.IsPositive() || !FitsStoredMoney(t.Amount.Decimal) {
			return
		}
	}
	if o, over := RunningBalanceOverflow(a.TransferBalance.Decimal, a.CurrentStatementTransactions); over {
		fe := o.FieldError("current_statement_transactions")
		c.add(fe.Attr, fe.Code, fe.Detail)
	}
}
