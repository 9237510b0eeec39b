package dataimport

import (
	"testing"

	"github.com/shopspring/decimal"
)

// The running balance must stay within numeric(16,2) after every
// transaction, in order; the first one that leaves it is named.
func TestRunningBalanceOverflow(t *testing.T) {
	tx := func(typ TransactionType, amount string) Transaction {
		return Transaction{Type: typ, Amount: NewMoney(decimal.RequireFromString(amount))}
	}
	cases := []struct {
		name    string
		opening string
		txs     []Transaction
		index   int // -1: fits throughout
		balance string
	}{
		{"nothing", "99999999999999.99", nil, -1, ""},
		{"to the upper bound", "0", []Transaction{tx(TransactionCharge, "99999999999999.99")}, -1, ""},
		{"to the lower bound", "0", []Transaction{tx(TransactionCredit, "99999999999999.99")}, -1, ""},
		{"a cent over", "99999999999999.99", []Transaction{tx(TransactionRepayment, "0.01")}, 0, "100000000000000.00"},
		{"a cent under", "-99999999999999.99", []Transaction{tx(TransactionPayment, "0.01")}, 0, "-100000000000000.00"},
		{"over on the way, back by the end", "99999999999999.00",
			[]Transaction{tx(TransactionCredit, "1"), tx(TransactionSupplyCharge, "2.50"), tx(TransactionCredit, "5")}, 1, "100000000000000.50"},
		{"first of several", "0", []Transaction{tx(TransactionCharge, "60000000000000"), tx(TransactionCharge, "60000000000000"),
			tx(TransactionCharge, "60000000000000")}, 1, "120000000000000.00"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, over := RunningBalanceOverflow(decimal.RequireFromString(tc.opening), tc.txs)
			if tc.index < 0 {
				if over {
					t.Fatalf("overflow %+v, want none", o)
				}
				return
			}
			if !over || o.Index != tc.index || o.Balance.StringFixed(2) != tc.balance {
				t.Fatalf("got %+v (over %v), want index %d balance %s", o, over, tc.index, tc.balance)
			}
			fe := o.FieldError("transactions")
			if fe.Code != CodeBalanceOutOfRange || fe.Attr != "transactions."+string(rune('0'+tc.index))+".amount" || fe.Detail == "" {
				t.Errorf("field error %+v", fe)
			}
		})
	}
}
