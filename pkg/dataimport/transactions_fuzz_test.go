package dataimport

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/shopspring/decimal"
)

var twoPlaces = regexp.MustCompile(`^-?[0-9]+\.[0-9]{2}$`)

// FuzzTransactions drives the transactions request through the strict
// decoder and ValidateTransactions. Properties: it never panics; a rejection
// is a parse_error without field errors or an invalid_payload whose errors
// all carry a code, an attr and a detail; an accepted request obeys every
// rule the store relies on (positive amounts of at most two places that fit
// numeric(16,2), unique IDs, supply charges that add up exactly), renders
// amounts as two-decimal strings, and is accepted again unchanged when
// written back out.
func FuzzTransactions(f *testing.F) {
	f.Add(readTestdata(f, "transactions_sample.json"))
	f.Add([]byte(supplyCharge))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := Decode(body, CodeInvalidPayload, "Invalid payload.", (*TransactionsRequest).Validate)
		if err != nil {
			checkRejection(t, err, CodeInvalidPayload)
			return
		}
		ids := map[string]bool{}
		for _, tx := range r.Transactions {
			if tx.TransactionID == "" || ids[tx.TransactionID] {
				t.Fatalf("blank or repeated id %q accepted", tx.TransactionID)
			}
			ids[tx.TransactionID] = true
			if !tx.Amount.IsPositive() || significantPlaces(tx.Amount.Decimal) > 2 || tx.Amount.Cmp(maxStoredMoney) >= 0 {
				t.Fatalf("amount %s accepted", tx.Amount.Decimal)
			}
			if tx.TransactionDate.IsZero() {
				t.Fatal("zero date accepted")
			}
			if tx.Type == TransactionSupplyCharge {
				sum := decimal.Zero
				for _, li := range tx.LineItems {
					sum = sum.Add(li.NetAmount.Decimal)
				}
				for _, ti := range tx.TaxItems {
					sum = sum.Add(ti.Amount.Decimal)
				}
				if !sum.Equal(tx.Amount.Decimal) {
					t.Fatalf("supply charge %s accepted with parts summing to %s", tx.Amount.Decimal, sum)
				}
			}
			if b, _ := json.Marshal(tx.Amount); !twoPlaces.Match(bytes.Trim(b, `"`)) {
				t.Fatalf("amount rendered as %s", b)
			}
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("marshal accepted request: %v", err)
		}
		again, err := Decode(out, CodeInvalidPayload, "Invalid payload.", (*TransactionsRequest).Validate)
		if err != nil {
			t.Fatalf("accepted request rejected when written back: %v\n%s", err, out)
		}
		if out2, _ := json.Marshal(again); !bytes.Equal(out, out2) {
			t.Fatalf("not idempotent:\n%s\n%s", out, out2)
		}
	})
}
