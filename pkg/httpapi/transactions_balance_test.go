package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// The balance column is numeric(16,2): a running balance beyond
// ±99,999,999,999,999.99 is refused as the TRANSACTION_IMPORT_ERROR of the
// transaction that takes it there, and nothing is stored (it was a 500).
func TestTransactionsBalanceOutOfRange(t *testing.T) {
	p := newPostImport(t)
	p.imported("EXT-B") // balance 5.21
	txCount := func() int64 { return p.count(`SELECT count(*) FROM account_transactions`) }

	// Up to the bound exactly: accepted.
	if r := p.post(transactionsPath, body("EXT-B", "transactions", charge("B-1", "2025-06-10", "99999999999994.78"))); r.Status != http.StatusCreated {
		t.Fatalf("to the bound: %d %s", r.Status, r.Body)
	}
	if b := p.balance("EXT-B"); b != "99999999999999.99" {
		t.Fatalf("balance %s", b)
	}
	refused := func(t *testing.T, id string, txs ...string) {
		t.Helper()
		before, balance := txCount(), p.balance("EXT-B")
		r := p.post(transactionsPath, body("EXT-B", "transactions", txs...))
		wantImportError(t, r, id)
		if d, _ := r.JSON()["error_detail"].(string); !strings.Contains(d, "balance") {
			t.Errorf("error_detail does not say why: %s", r.Body)
		}
		if txCount() != before || p.balance("EXT-B") != balance {
			t.Fatal("something was stored")
		}
	}
	t.Run("one cent over", func(t *testing.T) {
		refused(t, "B-2", charge("B-2", "2025-06-10", "0.01"))
	})
	t.Run("the running balance, in request order", func(t *testing.T) {
		refused(t, "B-5", credit("B-3", "2025-06-10", "1"), charge("B-4", "2025-06-10", "1"), charge("B-5", "2025-06-10", "0.01"), credit("B-6", "2025-06-10", "5"))
	})
	t.Run("known transactions are skipped, not counted", func(t *testing.T) {
		r := p.post(transactionsPath, body("EXT-B", "transactions", charge("B-1", "2025-06-10", "99999999999994.78")))
		if r.Status != http.StatusCreated || !strings.Contains(string(r.Body), "TRANSACTION_ALREADY_EXISTS") {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	})
	t.Run("below the negative bound", func(t *testing.T) {
		r := p.post(transactionsPath, body("EXT-B", "transactions", credit("B-7", "2025-06-10", "99999999999999.99"), credit("B-8", "2025-06-10", "99999999999999.99")))
		if r.Status != http.StatusCreated || p.balance("EXT-B") != "-99999999999999.99" {
			t.Fatalf("to the negative bound: %d %s, balance %s", r.Status, r.Body, p.balance("EXT-B"))
		}
		refused(t, "B-9", credit("B-9", "2025-06-10", "0.01"))
	})
}
