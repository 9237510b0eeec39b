package httpapi_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/testutil"
)

type txResults struct {
	Results []struct {
		Status          string         `json:"status"`
		TransactionData map[string]any `json:"transaction_data"`
	} `json:"results"`
}

func charge(id, date, amount string) string {
	return fmt.Sprintf(`{"transaction_id":%q,"transaction_date":%q,"amount":%s,"type":"CHARGE","reason":"IMPORTED_CHARGE"}`, id, date, amount)
}

func credit(id, date, amount string) string {
	return fmt.Sprintf(`{"transaction_id":%q,"transaction_date":%q,"amount":%s,"type":"CREDIT","reason":"GENERAL_CREDIT"}`, id, date, amount)
}

// wantImportError checks the interface's TRANSACTION_IMPORT_ERROR body and
// that it names transaction id.
func wantImportError(t *testing.T, r testutil.Response, id string) {
	t.Helper()
	assertEnvelope(t, r, http.StatusBadRequest, "transaction_import_error")
	b := r.JSON()
	data, _ := b["transaction_data"].(map[string]any)
	if b["status"] != "TRANSACTION_IMPORT_ERROR" || b["error_detail"] == "" || data["transaction_id"] != id {
		t.Fatalf("import error body: %s", r.Body)
	}
}

func TestTransactions(t *testing.T) {
	p := newPostImport(t)
	p.imported("EXT-T")
	// The sample account's open statement is 2025-06-01..2025-06-30; its
	// balance is -42.50 + 12.50 - 55.00 + 90.21.
	const opening = "5.21"
	txCount := func() int64 { return p.count(`SELECT count(*) FROM account_transactions`) }
	fromCreation := txCount()
	if b := p.balance("EXT-T"); b != opening {
		t.Fatalf("opening balance %s", b)
	}

	t.Run("interface sample, five types", func(t *testing.T) {
		r := p.post(transactionsPath, sample(t, "transactions_sample.json", "EXT-T"))
		if r.Status != http.StatusCreated {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		var res txResults
		r.Decode(&res)
		if len(res.Results) != 5 {
			t.Fatalf("%s", r.Body)
		}
		for i, want := range []string{"T-1001", "T-1002", "T-1003", "T-1004", "T-1005"} {
			if res.Results[i].Status != "TRANSACTION_ADDED_TO_ACCOUNT" || res.Results[i].TransactionData["transaction_id"] != want {
				t.Errorf("result %d: %+v", i, res.Results[i])
			}
		}
		for _, want := range []string{`"amount":"25.00"`, `"amount":"10.10"`, `"amount":"44.10"`, `"net_amount":"42.00"`,
			`"amount":"2.10"`, `"payment_type":"DD_REGULAR_COLLECTION"`, `"reason":"FULL_CREDIT_REFUND"`, `"rate_band":"CONSUMPTION_STANDARD"`} {
			if !strings.Contains(string(r.Body), want) {
				t.Errorf("body lacks %s: %s", want, r.Body)
			}
		}
		if strings.Contains(string(r.Body), "description") {
			t.Errorf("nothing was moved: %s", r.Body)
		}
		if b := p.balance("EXT-T"); b != "19.21" { // + 25 - 10.10 - 60 + 15 + 44.10
			t.Fatalf("balance %s", b)
		}
	})

	t.Run("same request twice: all TRANSACTION_ALREADY_EXISTS, balance unchanged", func(t *testing.T) {
		before := txCount()
		r := p.post(transactionsPath, sample(t, "transactions_sample.json", "EXT-T"))
		if r.Status != http.StatusCreated {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		var res txResults
		r.Decode(&res)
		for _, x := range res.Results {
			if x.Status != "TRANSACTION_ALREADY_EXISTS" {
				t.Errorf("%+v", x)
			}
		}
		if len(res.Results) != 5 || txCount() != before || p.balance("EXT-T") != "19.21" {
			t.Fatalf("changed: %d results, %d transactions, balance %s", len(res.Results), txCount()-before, p.balance("EXT-T"))
		}
		// A mix: the known one is skipped, the new one added.
		r = p.post(transactionsPath, body("EXT-T", "transactions", charge("T-1001", "2025-06-03", "25"), charge("T-2001", "2025-06-10", "1")))
		r.Decode(&res)
		if r.Status != http.StatusCreated || res.Results[0].Status != "TRANSACTION_ALREADY_EXISTS" || res.Results[1].Status != "TRANSACTION_ADDED_TO_ACCOUNT" {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		if b := p.balance("EXT-T"); b != "20.21" {
			t.Fatalf("balance %s", b)
		}
	})

	t.Run("check_previously_added=false: a repeat fails the whole request", func(t *testing.T) {
		before := txCount()
		r := p.post(transactionsPath+"?check_previously_added=false",
			body("EXT-T", "transactions", charge("T-3001", "2025-06-10", "7"), charge("T-1002", "2025-06-04", "10.10"), charge("T-1001", "2025-06-03", "25")))
		wantImportError(t, r, "T-1002")
		if !strings.Contains(r.JSON()["error_detail"].(string), "already") {
			t.Errorf("detail: %s", r.Body)
		}
		if txCount() != before || p.balance("EXT-T") != "20.21" || p.count(`SELECT count(*) FROM account_transactions WHERE transaction_id = 'T-3001'`) != 0 {
			t.Fatal("something was stored")
		}
		r = p.post(transactionsPath+"?check_previously_added=0", body("EXT-T", "transactions", charge("T-3001", "2025-06-10", "7")))
		if r.Status != http.StatusCreated || p.balance("EXT-T") != "27.21" {
			t.Fatalf("new transactions without the check: %d %s", r.Status, r.Body)
		}
	})

	t.Run("outside the open statement, flag off: 400 and nothing stored", func(t *testing.T) {
		before, notes := txCount(), p.count(`SELECT count(*) FROM account_notes`)
		r := p.post(transactionsPath+"?force_add_to_current_statement=False", body("EXT-T", "transactions",
			charge("T-4001", "2025-06-15", "1"), charge("T-4002", "2025-07-01", "2"), charge("T-4003", "2025-05-31", "3")))
		wantImportError(t, r, "T-4002")
		if data := r.JSON()["transaction_data"].(map[string]any); data["transaction_date"] != "2025-07-01" || data["amount"] != "2.00" {
			t.Errorf("transaction_data is not the transaction as sent: %s", r.Body)
		}
		if txCount() != before || p.count(`SELECT count(*) FROM account_notes`) != notes || p.balance("EXT-T") != "27.21" {
			t.Fatal("something was stored")
		}
	})

	t.Run("outside the open statement, flag on (default): moved, described, one pinned note", func(t *testing.T) {
		notes := p.count(`SELECT count(*) FROM account_notes`)
		r := p.post(transactionsPath, body("EXT-T", "transactions",
			charge("T-5001", "2025-05-20", "1.50"), charge("T-5002", "2025-06-20", "1"), credit("T-5003", "2025-08-02", "0.50")))
		if r.Status != http.StatusCreated {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		var res txResults
		r.Decode(&res)
		moved := map[int][2]string{0: {"2025-05-20", "2025-06-01"}, 2: {"2025-08-02", "2025-06-30"}}
		for i, x := range res.Results {
			d := x.TransactionData
			if m, ok := moved[i]; ok {
				if d["transaction_date"] != m[1] || d["original_transaction_date"] != m[0] ||
					d["description"] != dataimport.MovedDescription(mustDate(t, m[0]), mustDate(t, m[1])) {
					t.Errorf("moved %d: %v", i, d)
				}
			} else if d["transaction_date"] != "2025-06-20" || d["description"] != nil || d["original_transaction_date"] != nil {
				t.Errorf("in period %d: %v", i, d)
			}
		}
		var stored []struct {
			TransactionID, TransactionDate, OriginalDate, Description string
		}
		p.DB.Gorm().Raw(`SELECT transaction_id, transaction_date::text, coalesce(original_date::text, '') AS original_date, description
			FROM account_transactions WHERE transaction_id LIKE 'T-500%' ORDER BY transaction_id`).Scan(&stored)
		if len(stored) != 3 || stored[0].TransactionDate != "2025-06-01" || stored[0].OriginalDate != "2025-05-20" ||
			stored[2].TransactionDate != "2025-06-30" || stored[1].OriginalDate != "" || !strings.Contains(stored[2].Description, "2025-08-02") {
			t.Errorf("stored: %+v", stored)
		}
		var pinned []struct {
			Body     string
			IsPinned bool
		}
		p.DB.Gorm().Raw(`SELECT body, is_pinned FROM account_notes ORDER BY id OFFSET ?`, notes).Scan(&pinned)
		from, to := mustDate(t, "2025-06-01"), mustDate(t, "2025-06-30")
		if len(pinned) != 1 || !pinned[0].IsPinned || pinned[0].Body != dataimport.MovedNoteBody(2, from, to) {
			t.Errorf("notes added: %+v", pinned)
		}
		if b := p.balance("EXT-T"); b != "29.21" { // + 1.50 + 1 - 0.50
			t.Errorf("balance %s", b)
		}
	})

	t.Run("query flags", func(t *testing.T) {
		for _, q := range []string{"check_previously_added=yes", "check_previously_added=", "force_add_to_current_statement=2",
			"force_add_to_current_statement=tru", "check_previously_added=true&check_previously_added=false", "force_add_to_current_statement=%20true"} {
			r := p.post(transactionsPath+"?"+q, body("EXT-T", "transactions", charge("T-6001", "2025-06-10", "1")))
			assertEnvelope(t, r, http.StatusBadRequest, "invalid_payload")
			attr, _, _ := strings.Cut(q, "=")
			if errs := fieldErrors(t, r); errs[attr] != "invalid" || len(errs) != 1 {
				t.Errorf("%s: %v", q, errs)
			}
		}
		// Flag errors come with the body's.
		r := p.post(transactionsPath+"?force_add_to_current_statement=maybe", body("EXT-T", "transactions", `{}`))
		if errs := fieldErrors(t, r); errs["force_add_to_current_statement"] != "invalid" || errs["transactions.0.amount"] != "required" {
			t.Errorf("%v", errs)
		}
		for i, q := range []string{"check_previously_added=TRUE&force_add_to_current_statement=1", "check_previously_added=1&force_add_to_current_statement=True", "unrelated=x"} {
			r := p.post(transactionsPath+"?"+q, body("EXT-T", "transactions", charge(fmt.Sprintf("T-61%02d", i), "2025-06-10", "1")))
			if r.Status != http.StatusCreated {
				t.Errorf("%s: %d %s", q, r.Status, r.Body)
			}
		}
	})

	t.Run("exact decimal arithmetic", func(t *testing.T) {
		before := p.balance("EXT-T") // 32.21
		// 0.1 + 0.2 - 0.3 is exactly 0 (it is not in float64).
		r := p.post(transactionsPath, body("EXT-T", "transactions", charge("D-1", "2025-06-10", "0.1"), charge("D-2", "2025-06-10", "0.2"), credit("D-3", "2025-06-10", "0.3"),
			`{"transaction_id":"D-4","transaction_date":"2025-06-10","amount":0.3,"type":"SUPPLY_CHARGE","product_code":"P","line_items":[
				{"start_date":"2025-06-01","end_date":"2025-06-01","net_amount":0.1},{"start_date":"2025-06-02","end_date":"2025-06-02","net_amount":0.2}]}`,
			credit("D-5", "2025-06-10", "0.3")))
		if r.Status != http.StatusCreated || p.balance("EXT-T") != before {
			t.Fatalf("%d %s; balance %s, want %s", r.Status, r.Body, p.balance("EXT-T"), before)
		}
		// Many amounts: 1,000 × 0.01 + 1,000 × 0.07 = 80.00 exactly, in
		// requests of 500 (the most one request may carry).
		items := make([]string, 0, 2000)
		for i := range 1000 {
			items = append(items, charge(fmt.Sprintf("M-%d", i), "2025-06-11", "0.01"), charge(fmt.Sprintf("N-%d", i), "2025-06-11", `"0.07"`))
		}
		for chunk := range slices.Chunk(items, 500) {
			if r := p.post(transactionsPath, body("EXT-T", "transactions", chunk...)); r.Status != http.StatusCreated {
				t.Fatalf("%d %.300s", r.Status, r.Body)
			}
		}
		if b := p.balance("EXT-T"); b != "112.21" {
			t.Fatalf("balance %s after 2,000 small charges, want 112.21", b)
		}
	})

	t.Run("validation", func(t *testing.T) {
		before, balance := txCount(), p.balance("EXT-T")
		for _, tc := range []struct {
			name, tx, attr, code string
		}{
			{"three decimals", charge("V-1", "2025-06-10", "1.005"), "transactions.1.amount", "max_decimal_places"},
			{"zero", charge("V-1", "2025-06-10", "0"), "transactions.1.amount", "amount_must_be_positive"},
			{"negative", charge("V-1", "2025-06-10", "-5"), "transactions.1.amount", "amount_must_be_positive"},
			{"not a number", charge("V-1", "2025-06-10", `"ten"`), "transactions.1.amount", "invalid_decimal"},
			{"too large to store", charge("V-1", "2025-06-10", "100000000000000"), "transactions.1.amount", "max_whole_digits"},
			{"date", charge("V-1", "2025-02-30", "1"), "transactions.1.transaction_date", "invalid_date"},
			{"type", `{"transaction_id":"V-1","transaction_date":"2025-06-10","amount":1,"type":"BONUS"}`, "transactions.1.type", "invalid_choice"},
			{"reason for CHARGE", `{"transaction_id":"V-1","transaction_date":"2025-06-10","amount":1,"type":"CHARGE"}`, "transactions.1.reason", "required"},
			{"payment_type for PAYMENT", `{"transaction_id":"V-1","transaction_date":"2025-06-10","amount":1,"type":"PAYMENT"}`, "transactions.1.payment_type", "required"},
			{"supply charge sum", `{"transaction_id":"V-1","transaction_date":"2025-06-10","amount":1,"type":"SUPPLY_CHARGE","product_code":"P",
				"line_items":[{"start_date":"2025-06-01","end_date":"2025-06-01","net_amount":0.99}]}`, "transactions.1.amount", "supply_charge_amount_mismatch"},
			{"duplicate id", charge("V-0", "2025-06-10", "1"), "transactions.1.transaction_id", "duplicate_transaction_ids"},
			{"unknown field", `{"transaction_id":"V-1","transaction_date":"2025-06-10","amount":1,"type":"CHARGE","reason":"IMPORTED_CHARGE","currency":"GBP"}`,
				"transactions.1.currency", "unknown_field"},
		} {
			r := p.post(transactionsPath, body("EXT-T", "transactions", charge("V-0", "2025-06-10", "1"), tc.tx))
			assertEnvelope(t, r, http.StatusBadRequest, "invalid_payload")
			if errs := fieldErrors(t, r); errs[tc.attr] != tc.code {
				t.Errorf("%s: %v", tc.name, errs)
			}
		}
		if txCount() != before || p.balance("EXT-T") != balance {
			t.Fatal("an invalid request stored something")
		}
		if fromCreation != 3 {
			t.Errorf("%d transactions from creation", fromCreation)
		}
	})
}

// Concurrent requests for one account are serialised by its row lock: the
// same new transactions sent eight times at once are added exactly once.
func TestTransactionsConcurrent(t *testing.T) {
	p := newPostImport(t)
	p.imported("EXT-C")
	req := body("EXT-C", "transactions", charge("C-1", "2025-06-10", "10"), charge("C-2", "2025-06-11", "0.01"), credit("C-3", "2025-06-12", "3"))
	var wg sync.WaitGroup
	added := make([]int, 8)
	for i := range added {
		wg.Go(func() {
			r := p.post(transactionsPath, req)
			if r.Status != http.StatusCreated {
				t.Errorf("%d %s", r.Status, r.Body)
				return
			}
			var res txResults
			r.Decode(&res)
			for _, x := range res.Results {
				if x.Status == "TRANSACTION_ADDED_TO_ACCOUNT" {
					added[i]++
				}
			}
		})
	}
	wg.Wait()
	total := 0
	for _, n := range added {
		if n != 0 && n != 3 {
			t.Errorf("a request added %d of 3", n)
		}
		total += n
	}
	if total != 3 || p.balance("EXT-C") != "12.22" { // 5.21 + 10 + 0.01 - 3
		t.Fatalf("added %d, balance %s", total, p.balance("EXT-C"))
	}
}

func mustDate(t *testing.T, s string) dataimport.Date {
	t.Helper()
	d, err := dataimport.ParseDate(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
