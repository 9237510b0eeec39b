package app_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// Data that Postgres would refuse must be refused by validation, when staged
// and again when the worker revalidates: never retried by the worker while
// it holds a slot, never a 500 "retry as is".

// edited is the sample account for external with edit applied to its JSON.
func (p *pipeline) edited(external string, edit func(map[string]any)) string {
	p.TB.Helper()
	dec := json.NewDecoder(strings.NewReader(p.account(external)))
	dec.UseNumber()
	var m map[string]any
	must(p.TB, dec.Decode(&m))
	edit(m)
	b, err := json.Marshal(m)
	must(p.TB, err)
	return string(b)
}

// wantFieldError checks a 400 in the envelope with code at attr.
func wantFieldError(t *testing.T, r testutil.Response, top, attr, code string) {
	t.Helper()
	if r.Status != http.StatusBadRequest || r.JSON()["code"] != top {
		t.Fatalf("want 400 %s, got %d %.300s", top, r.Status, r.Body)
	}
	var env struct {
		Errors []struct{ Attr, Code string }
	}
	r.Decode(&env)
	for _, e := range env.Errors {
		if e.Attr == attr && e.Code == code {
			return
		}
	}
	t.Fatalf("no %s at %s: %.1000s", code, attr, r.Body)
}

func TestDatabaseOnlyRulesRefusedWhenStaged(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker()
	cases := []struct {
		name, attr, code string
		edit             func(map[string]any)
		// staged writes the same fault straight into the staged payload,
		// as if it had been staged under older rules.
		staged string
	}{
		{"transfer_balance beyond numeric(16,2)", "transfer_balance", "max_whole_digits",
			func(m map[string]any) { m["transfer_balance"] = json.Number("1e15") },
			`jsonb_set(payload, '{transfer_balance}', '"1000000000000000.00"')`},
		{"first statement would end before it starts", "next_bill_due_date", "start_date_later_than_end_date",
			func(m map[string]any) {
				delete(m, "last_statement_closing_date")
				m["next_bill_due_date"] = "2020-01-31"
			},
			`jsonb_set(payload - 'last_statement_closing_date', '{next_bill_due_date}', '"2020-01-31"')`},
		{"opening balance overflows after the opening transactions", "current_statement_transactions.0.amount", "balance_out_of_range",
			func(m map[string]any) { m["transfer_balance"] = "99999999999999.99" },
			`jsonb_set(payload, '{transfer_balance}', '"99999999999999.99"')`},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			external := "EXT-DB" + string(rune('A'+i))
			body := p.edited(external, tc.edit)
			for _, path := range []string{validatePath, stagePath} {
				wantFieldError(t, p.As(p.token, http.MethodPost, path, body), "account_failed_validation", tc.attr, tc.code)
				testutil.Tally(testutil.BadInputsTried, 1)
			}
			if n := p.count(`SELECT count(*) FROM import_processes WHERE external_account_number = ?`, external); n != 0 {
				t.Fatalf("refused account was staged")
			}

			// Staged behind the API's back: the worker's revalidation refuses
			// it at once (no retries, no 202 after PROCESS_WAIT).
			p.stage(external)
			must(t, p.DB.Gorm().Exec(`UPDATE import_process_versions SET payload = `+tc.staged+
				` WHERE process_id = (SELECT id FROM import_processes WHERE external_account_number = ?)`, external).Error)
			wantFieldError(t, p.create(external, nil), "account_failed_validation", tc.attr, tc.code)
			st := p.status(external)
			if le, _ := st["latest_error"].(map[string]any); st["status"] != "UNKNOWN" || le["code"] != "account_failed_validation" {
				t.Fatalf("status: %v", st)
			}
		})
	}
	if n := p.count(`SELECT count(*) FROM accounts`); n != 0 {
		t.Fatalf("%d accounts", n)
	}
}
