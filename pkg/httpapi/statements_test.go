package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

func statement(id, from, to, extra string) string {
	return fmt.Sprintf(`{"statement_id":%q,"bill_period_from_date":%q,"bill_period_to_date":%q%s}`, id, from, to, extra)
}

func TestHistoricalStatements(t *testing.T) {
	p := newPostImport(t)
	p.imported("EXT-S")
	p.doc("statements/EXT-0001/2025-04.pdf", "statements/EXT-0001/2025-05.pdf", "s/a.pdf")
	stored := func() int64 { return p.count(`SELECT count(*) FROM historical_statements`) }

	t.Run("interface sample: 201 with the validated data", func(t *testing.T) {
		r := p.post(statementsPath, sample(t, "statements_sample.json", "EXT-S"))
		if r.Status != http.StatusCreated {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		var got struct {
			ImportSupplier        string           `json:"import_supplier"`
			ExternalAccountNumber string           `json:"external_account_number"`
			Statements            []map[string]any `json:"statements"`
		}
		r.Decode(&got)
		if got.ImportSupplier != "DEMO_ENERGY" || got.ExternalAccountNumber != "EXT-S" || len(got.Statements) != 2 ||
			got.Statements[1]["gross_amount"] != "98.10" || got.Statements[0]["statement_path"] != "statements/EXT-0001/2025-04.pdf" ||
			got.Statements[0]["issued_date"] != "2025-05-02" {
			t.Fatalf("%s", r.Body)
		}
		var row struct {
			GrossAmount, BillPeriodToDate, StatementPath string
		}
		p.DB.Gorm().Raw(`SELECT gross_amount::text AS gross_amount, bill_period_to_date::text AS bill_period_to_date, statement_path
			FROM historical_statements WHERE statement_id = 'ST-2025-05'`).Scan(&row)
		if row.GrossAmount != "98.10" || row.BillPeriodToDate != "2025-05-31" || row.StatementPath != "statements/EXT-0001/2025-05.pdf" {
			t.Errorf("stored %+v", row)
		}
	})

	t.Run("a statement_id already on the account: 400, nothing stored", func(t *testing.T) {
		before := stored()
		r := p.post(statementsPath, body("EXT-S", "statements", statement("ST-NEW", "2025-01-01", "2025-01-31", ""),
			statement("ST-2025-05", "2025-05-01", "2025-05-31", "")))
		assertEnvelope(t, r, http.StatusBadRequest, "historical_statement_already_exists")
		if errs := fieldErrors(t, r); errs["statements.1.statement_id"] != "historical_statement_already_exists" || len(errs) != 1 {
			t.Errorf("%v", errs)
		}
		if stored() != before {
			t.Fatal("stored something")
		}
		// Another account may use the same statement_id.
		p.imported("EXT-S2")
		if r := p.post(statementsPath, body("EXT-S2", "statements", statement("ST-2025-05", "2025-05-01", "2025-05-31", ""))); r.Status != http.StatusCreated {
			t.Fatalf("other account: %d %s", r.Status, r.Body)
		}
	})

	t.Run("validation", func(t *testing.T) {
		before := stored()
		tomorrow := time.Now().UTC().AddDate(0, 0, 1).Format("2006-01-02")
		today := time.Now().UTC().Format("2006-01-02")
		for _, tc := range []struct {
			name, st, attr, code string
		}{
			{"id required", `{"bill_period_from_date":"2025-01-01","bill_period_to_date":"2025-01-31"}`, "statements.1.statement_id", "required"},
			{"from required", `{"statement_id":"X","bill_period_to_date":"2025-01-31"}`, "statements.1.bill_period_from_date", "required"},
			{"to required", `{"statement_id":"X","bill_period_from_date":"2025-01-01"}`, "statements.1.bill_period_to_date", "required"},
			{"from after to", statement("X", "2025-02-01", "2025-01-31", ""), "statements.1.bill_period_to_date", "start_date_later_than_end_date"},
			{"ends in the future", statement("X", "2025-02-01", tomorrow, ""), "statements.1.bill_period_to_date", "historical_statement_period_end_in_future"},
			{"issued in the future", statement("X", "2025-02-01", "2025-02-28", `,"issued_date":"`+tomorrow+`"`), "statements.1.issued_date", "date_in_future"},
			{"gross amount places", statement("X", "2025-02-01", "2025-02-28", `,"gross_amount":1.234`), "statements.1.gross_amount", "max_decimal_places"},
			{"gross amount type", statement("X", "2025-02-01", "2025-02-28", `,"gross_amount":true`), "statements.1.gross_amount", "invalid_decimal"},
			{"number type", statement("X", "2025-02-01", "2025-02-28", `,"number":12`), "statements.1.number", "invalid"},
			{"not a PDF", statement("X", "2025-02-01", "2025-02-28", `,"statement_path":"s/a.docx"`), "statements.1.statement_path", "invalid_document_path"},
			{"twice in the request", statement("OK", "2025-02-01", "2025-02-28", ""), "statements.1.statement_id", "historical_statement_already_exists"},
			{"unknown field", statement("X", "2025-02-01", "2025-02-28", `,"pages":3`), "statements.1.pages", "unknown_field"},
		} {
			r := p.post(statementsPath, body("EXT-S", "statements", statement("OK", "2025-01-01", "2025-01-31", ""), tc.st))
			assertEnvelope(t, r, http.StatusBadRequest, "invalid_payload")
			if errs := fieldErrors(t, r); errs[tc.attr] != tc.code {
				t.Errorf("%s: %v", tc.name, errs)
			}
		}
		for path, code := range oddPaths {
			r := p.post(statementsPath, body("EXT-S", "statements", statement("OK", "2025-01-01", "2025-01-31", ""),
				statement("X", "2025-02-01", "2025-02-28", `,"statement_path":`+jsonString(path))))
			assertEnvelope(t, r, http.StatusBadRequest, "invalid_payload")
			if errs := fieldErrors(t, r); errs["statements.1.statement_path"] != code || len(errs) != 1 {
				t.Errorf("%.30q: %v", path, errs)
			}
		}
		if stored() != before {
			t.Fatal("an invalid request stored something")
		}
		// A period may end today.
		if r := p.post(statementsPath, body("EXT-S", "statements", statement("TODAY", "2025-02-01", today, ""))); r.Status != http.StatusCreated {
			t.Errorf("period ending today: %d %s", r.Status, r.Body)
		}
	})

	t.Run("statement_path missing from the store", func(t *testing.T) {
		before := stored()
		r := p.post(statementsPath, body("EXT-S", "statements", statement("P1", "2025-01-01", "2025-01-31", `,"statement_path":"s/a.pdf"`),
			statement("P2", "2025-02-01", "2025-02-28", `,"statement_path":"s/b.pdf"`)))
		assertEnvelope(t, r, http.StatusBadRequest, "invalid_payload")
		if errs := fieldErrors(t, r); errs["statements.1.statement_path"] != "path_does_not_exist_in_file_store" || len(errs) != 1 {
			t.Errorf("%v", errs)
		}
		if stored() != before || !strings.Contains(string(r.Body), "s/b.pdf") {
			t.Fatalf("stored something, or detail lacks the path: %s", r.Body)
		}
	})
}
