package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// Organisation A's token, aimed at organisation B's supplier and account on
// every endpoint, gets exactly the answer of a supplier that does not exist,
// and changes nothing of B's.
func TestTenantIsolationMatrix(t *testing.T) {
	mock := testutil.NewStripeMock(t)
	st := testutil.NewStack(t, testutil.FastPipeline, testutil.WithStripe(mock.URL))
	ctx := context.Background()
	st.Supplier("ALPHA")
	st.Supplier("DEMO_ENERGY") // B's supplier: the fixture account names it
	alpha := st.Tenant("Alpha Org", "ALPHA")
	bravo := st.Tenant("Bravo Org", "DEMO_ENERGY")
	must(t, firstErr(st.DB.CreateTeam(ctx, "Migrations")))
	b := &pipeline{Stack: st, token: bravo.Token}
	st.StartWorker()
	b.stage("B-1")
	if r := b.create("B-1", nil); r.Status != http.StatusCreated {
		t.Fatalf("B's account: %d %s", r.Status, r.Body)
	}
	b.stage("B-2") // staged only
	before := b.count(`SELECT count(*) FROM account_notes`) + b.count(`SELECT count(*) FROM account_transactions`) +
		b.count(`SELECT count(*) FROM import_process_versions`)

	today := time.Now().UTC().Format("2006-01-02")
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format("2006-01-02")
	bodies := func(supplier string) []struct{ method, path, body string } {
		acct := strings.Replace(b.account("B-2"), `"DEMO_ENERGY"`, `"`+supplier+`"`, 1)
		return []struct{ method, path, body string }{
			{http.MethodPost, "/v1/data-import/validate-account/", acct},
			{http.MethodPost, "/v1/data-import/account-import-process/create-or-update/", acct},
			{http.MethodPost, "/v1/data-import/account-import-process/process/",
				`{"external_account_number":"B-2","import_supplier_code":"` + supplier + `","operations_team_name":"Migrations"}`},
			{http.MethodGet, "/v1/data-import/account-transfer-status/" + supplier + "/B-1/", ""},
			{http.MethodGet, "/v1/data-import/all-account-import-processes/" + supplier + "/", ""},
			{http.MethodGet, "/v1/data-import/pending-account-import-processes/" + supplier + "/", ""},
			{http.MethodGet, "/v1/data-import/imported-account-import-processes/" + supplier + "/", ""},
			{http.MethodGet, "/v1/data-import/events/?import_supplier=" + supplier, ""},
			{http.MethodPost, "/v1/data-import/notes/create/",
				`{"import_supplier":"` + supplier + `","external_account_number":"B-1","notes":[{"body":"hello"}]}`},
			{http.MethodPost, "/v1/data-import/transactions/create/",
				`{"import_supplier":"` + supplier + `","external_account_number":"B-1","transactions":[{"transaction_id":"T-1","transaction_date":"` + today + `","amount":"1.00","type":"CHARGE","reason":"IMPORTED_CHARGE"}]}`},
			{http.MethodPost, "/v1/data-import/historical-statements/create/",
				`{"import_supplier":"` + supplier + `","external_account_number":"B-1","statements":[{"statement_id":"S-1","bill_period_from_date":"2024-01-01","bill_period_to_date":"` + yesterday + `","issued_date":"` + yesterday + `","number":"1","gross_amount":"10.00"}]}`},
			{http.MethodPost, "/v1/data-import/payment-instruction/create/",
				`{"import_supplier":"` + supplier + `","external_account_number":"B-1","vendor":"STRIPE","reference":"pm_123","type":"CARD"}`},
		}
	}
	foreign, unknown := bodies("DEMO_ENERGY"), bodies("NOPE")
	for i := range foreign {
		var bf, bu any
		if foreign[i].body != "" {
			bf, bu = foreign[i].body, unknown[i].body
		}
		rf := st.As(alpha.Token, foreign[i].method, foreign[i].path, bf)
		ru := st.As(alpha.Token, unknown[i].method, unknown[i].path, bu)
		name := foreign[i].method + " " + foreign[i].path
		if rf.Status < 400 || rf.Status != ru.Status || strings.ReplaceAll(string(rf.Body), "DEMO_ENERGY", "NOPE") != string(ru.Body) {
			t.Errorf("%s: foreign supplier answered %d %s; unknown supplier %d %s", name, rf.Status, rf.Body, ru.Status, ru.Body)
			continue
		}
		for _, leak := range []string{"goroutine ", ".go:", "panic", "runtime."} {
			if strings.Contains(string(rf.Body), leak) {
				t.Errorf("%s: error body leaks internals: %s", name, rf.Body)
			}
		}
		testutil.Tally(testutil.RefusedCorrectly, 2)
	}
	after := b.count(`SELECT count(*) FROM account_notes`) + b.count(`SELECT count(*) FROM account_transactions`) +
		b.count(`SELECT count(*) FROM import_process_versions`)
	if after != before {
		t.Fatalf("A's requests changed B's data: %d rows before, %d after", before, after)
	}
	// Control: the same requests with B's own token succeed, so what A met
	// was the tenancy check and nothing else.
	for _, req := range foreign {
		var body any
		if req.body != "" {
			body = req.body
		}
		if r := st.As(bravo.Token, req.method, req.path, body); r.Status >= 300 {
			t.Errorf("control %s %s with the owner's token: %d %s", req.method, req.path, r.Status, r.Body)
		}
	}
	// Neither API keys nor tokens ever reach the logs.
	logs := st.Logs.String()
	for _, secret := range []string{alpha.APIKey, bravo.APIKey, alpha.Token, bravo.Token} {
		if strings.Contains(logs, secret) {
			t.Fatalf("a credential was written to the logs")
		}
	}
	if !strings.Contains(logs, `"request_id"`) {
		t.Fatal("logs carry no request IDs")
	}
}
