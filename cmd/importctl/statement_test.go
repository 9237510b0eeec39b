package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/testutil"
)

func TestStatementOpen(t *testing.T) {
	st := testutil.NewStack(t, testutil.FastPipeline)
	t.Setenv("DATABASE_URL", st.Config.DatabaseURL)
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	if _, err := st.DB.CreateTeam(context.Background(), "Migrations"); err != nil {
		t.Fatal(err)
	}
	st.StartWorker()
	number := st.ImportAccount(ten.Token, "DEMO_ENERGY", "EXT-1", "Migrations") // open statement 2025-06-01..2025-06-30

	type period struct{ From, To string }
	statements := func() (open []period, closed []period) {
		var rows []struct{ PeriodFrom, PeriodTo, Status string }
		st.DB.Gorm().Raw(`SELECT period_from::text AS period_from, period_to::text AS period_to, status FROM statements ORDER BY period_from`).Scan(&rows)
		for _, r := range rows {
			if r.Status == "OPEN" {
				open = append(open, period{r.PeriodFrom, r.PeriodTo})
			} else {
				closed = append(closed, period{r.PeriodFrom, r.PeriodTo})
			}
		}
		return open, closed
	}

	for _, bad := range [][]string{
		{"DEMO_ENERGY", "EXT-1", "--from", "2025-06-15", "--to", "2025-07-31"}, // overlaps the open statement
		{"DEMO_ENERGY", "EXT-1", "--from", "2025-06-30", "--to", "2025-07-31"}, // shares its last day
		{"DEMO_ENERGY", "EXT-1", "--from", "2025-04-01", "--to", "2025-04-30"}, // before it
		{"DEMO_ENERGY", "EXT-1", "--from", "2025-07-31", "--to", "2025-07-01"}, // to before from
		{"DEMO_ENERGY", "EXT-1", "--from", "2025-07-01", "--to", "2025-02-30"}, // no such day
		{"DEMO_ENERGY", "EXT-1", "--from", "2025-07-01"},                       // --to missing
		{"DEMO_ENERGY", "EXT-NOPE", "--from", "2025-07-01", "--to", "2025-07-31"},
		{"NOPE", "EXT-1", "--from", "2025-07-01", "--to", "2025-07-31"},
	} {
		if out, err := importctl(t, append([]string{"statement", "open"}, bad...)...); err == nil {
			t.Errorf("accepted %v: %s", bad, out)
		}
	}
	if open, closed := statements(); len(open) != 1 || open[0] != (period{"2025-06-01", "2025-06-30"}) || len(closed) != 0 {
		t.Fatalf("a refused command changed statements: %v %v", open, closed)
	}

	var out struct {
		PlatformAccountNumber string `json:"platform_account_number"`
		Opened, Closed        period
	}
	raw := mustCtl(t, "statement", "open", "DEMO_ENERGY", "EXT-1", "--from", "2025-07-01", "--to", "2025-07-31", "--json")
	if err := json.Unmarshal([]byte(raw), &out); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	if out.PlatformAccountNumber != number || out.Opened != (period{"2025-07-01", "2025-07-31"}) || out.Closed != (period{"2025-06-01", "2025-06-30"}) {
		t.Fatalf("%s", raw)
	}
	open, closed := statements()
	if len(open) != 1 || open[0] != out.Opened || len(closed) != 1 || closed[0] != out.Closed {
		t.Fatalf("statements: %v %v", open, closed)
	}

	// Transactions now land in the new statement; a June date is moved into it.
	r := st.As(ten.Token, http.MethodPost, "/v1/data-import/transactions/create/", `{"import_supplier":"DEMO_ENERGY","external_account_number":"EXT-1",
		"transactions":[{"transaction_id":"J1","transaction_date":"2025-07-10","amount":1,"type":"CHARGE","reason":"IMPORTED_CHARGE"},
		{"transaction_id":"J2","transaction_date":"2025-06-15","amount":1,"type":"CHARGE","reason":"IMPORTED_CHARGE"}]}`)
	if r.Status != http.StatusCreated || !strings.Contains(string(r.Body), `"transaction_id":"J2","transaction_date":"2025-07-01"`) ||
		!strings.Contains(string(r.Body), `"original_transaction_date":"2025-06-15"`) {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	var inNew int64
	st.DB.Gorm().Raw(`SELECT count(*) FROM account_transactions t JOIN statements s ON s.id = t.statement_id
		WHERE s.status = 'OPEN' AND t.transaction_id IN ('J1', 'J2') AND t.transaction_date BETWEEN s.period_from AND s.period_to`).Scan(&inNew)
	if inNew != 2 {
		t.Fatalf("%d of 2 transactions in the new open statement", inNew)
	}

	// A gap is allowed; the human output names both periods.
	human := mustCtl(t, "statement", "open", "DEMO_ENERGY", "EXT-1", "--from", "2025-08-05", "--to", "2025-09-04")
	if !strings.Contains(human, "opened statement 2025-08-05 to 2025-09-04") || !strings.Contains(human, "closed 2025-07-01 to 2025-07-31") {
		t.Fatalf("human output %q", human)
	}
}
