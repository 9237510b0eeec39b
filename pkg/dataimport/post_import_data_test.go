package dataimport

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The interface's sample payloads decode and validate as written.
func TestPostImportSamplesAccepted(t *testing.T) {
	now := time.Date(2025, 6, 15, 12, 0, 0, 0, time.UTC)
	notes, err := Decode(readTestdata(t, "notes_sample.json"), CodeInvalidPayload, "x",
		func(r *NotesRequest) []FieldError { return r.Validate(now) })
	if err != nil {
		t.Fatalf("notes: %v", err)
	}
	if n := notes.Notes[1]; !*n.IsPinned || n.UnpinAt.String() != "2026-05-01T00:00:00Z" {
		t.Errorf("pinned note: %+v", n)
	}
	txs, err := Decode(readTestdata(t, "transactions_sample.json"), CodeInvalidPayload, "x", (*TransactionsRequest).Validate)
	if err != nil {
		t.Fatalf("transactions: %v", err)
	}
	seen := map[TransactionType]bool{}
	sum := decimal.Zero
	for _, tx := range txs.Transactions {
		seen[tx.Type] = true
		sum = sum.Add(tx.BalanceEffect())
	}
	if len(seen) != len(TransactionTypes) {
		t.Errorf("sample covers %d of %d types", len(seen), len(TransactionTypes))
	}
	if sum.StringFixed(2) != "14.00" { // 25 - 10.10 - 60 + 15 + 44.10
		t.Errorf("balance effect %s", sum)
	}
	st, err := Decode(readTestdata(t, "statements_sample.json"), CodeInvalidPayload, "x",
		func(r *StatementsRequest) []FieldError { return r.Validate(Date{2025, 6, 15}) })
	if err != nil {
		t.Fatalf("statements: %v", err)
	}
	out := string(encode(t, st))
	for _, want := range []string{`"gross_amount":"120.55"`, `"gross_amount":"98.10"`, `"bill_period_to_date":"2025-05-31"`} {
		if !strings.Contains(out, want) {
			t.Errorf("validated statements lack %s: %s", want, out)
		}
	}
}

func TestValidateStatements(t *testing.T) {
	today := Date{2025, 6, 15}
	body := func(sts ...string) []byte {
		return []byte(`{"import_supplier":"S","external_account_number":"E","statements":[` + strings.Join(sts, ",") + `]}`)
	}
	const base = `{"statement_id":"A","bill_period_from_date":"2025-05-01","bill_period_to_date":"2025-05-31","issued_date":"2025-06-01","number":"1","gross_amount":10.5,"statement_path":"s/a.pdf"}`
	with := func(old, new string) string {
		if !strings.Contains(base, old) {
			t.Fatalf("base lacks %q", old)
		}
		return strings.Replace(base, old, new, 1)
	}
	id := func(id, st string) string {
		return strings.Replace(st, `"statement_id":"A"`, `"statement_id":"`+id+`"`, 1)
	}
	minimal := `{"statement_id":"M","bill_period_from_date":"2025-05-01","bill_period_to_date":"2025-05-01"}`
	cases := []struct {
		name string
		body []byte
		want []string
	}{
		{"full", body(base), nil},
		{"minimal, one-day period", body(minimal), nil},
		{"empty list", body(), nil},
		{"period may end today", body(with(`"2025-05-31"`, `"2025-06-15"`)), nil},
		{"PDF suffix in any case", body(with(`s/a.pdf`, `s/A.PDF`)), nil},
		{"required", body(`{}`), []string{"required@statements.0.statement_id", "required@statements.0.bill_period_from_date",
			"required@statements.0.bill_period_to_date"}},
		{"statements required", []byte(`{"import_supplier":"S","external_account_number":"E"}`), []string{"required@statements"}},
		{"blank id", body(with(`"A"`, `" "`)), []string{"blank@statements.0.statement_id"}},
		{"id too long", body(with(`"A"`, `"`+strings.Repeat("x", 256)+`"`)), []string{"max_length@statements.0.statement_id"}},
		{"from after to", body(with(`"2025-05-31"`, `"2025-04-30"`)), []string{"start_date_later_than_end_date@statements.0.bill_period_to_date"}},
		{"period ends in the future", body(with(`"2025-05-31"`, `"2025-06-16"`)),
			[]string{"historical_statement_period_end_in_future@statements.0.bill_period_to_date"}},
		{"issued in the future", body(with(`"2025-06-01"`, `"2025-06-16"`)), []string{"date_in_future@statements.0.issued_date"}},
		{"bad dates", body(with(`"2025-05-01"`, `"2025-02-30"`), id("B", with(`"2025-06-01"`, `"01/06/2025"`))),
			[]string{"invalid_date@statements.0.bill_period_from_date", "invalid_date@statements.1.issued_date"}},
		{"gross amount places", body(with(`10.5`, `10.505`)), []string{"max_decimal_places@statements.0.gross_amount"}},
		{"gross amount not a number", body(with(`10.5`, `"ten"`)), []string{"invalid_decimal@statements.0.gross_amount"}},
		{"gross amount too large for storage", body(with(`10.5`, `100000000000000`)), []string{"max_whole_digits@statements.0.gross_amount"}},
		{"negative gross amount allowed (credit statement)", body(with(`10.5`, `-10.5`)), nil},
		{"number too long", body(with(`"number":"1"`, `"number":"`+strings.Repeat("9", 256)+`"`)), []string{"max_length@statements.0.number"}},
		{"not a PDF", body(with(`s/a.pdf`, `s/a.txt`), id("B", with(`s/a.pdf`, `s/.pdf`)), id("C", with(`s/a.pdf`, `s/pdf`))),
			[]string{"invalid_document_path@statements.0.statement_path", "invalid_document_path@statements.1.statement_path",
				"invalid_document_path@statements.2.statement_path"}},
		{"duplicate ids in the request", body(base, with(`"number":"1"`, `"number":"2"`)),
			[]string{"historical_statement_already_exists@statements.1.statement_id"}},
		{"unknown field", body(with(`"number":"1"`, `"number":"1","currency":"GBP"`)), []string{"unknown_field@statements.0.currency"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.body, CodeInvalidPayload, "x", func(r *StatementsRequest) []FieldError { return r.Validate(today) })
			var got []FieldError
			if err != nil {
				e, ok := AsError(err)
				if !ok || e.Code != CodeInvalidPayload {
					t.Fatalf("unexpected %v", err)
				}
				got = e.Errors
			}
			wantErrs(t, got, tc.want...)
		})
	}
}

// oddPaths are refused on every field that holds a document path. NUL is
// refused by the binder (no string with NUL reaches a validator); the others
// by the path rules.
var oddPaths = map[string]string{
	"../x":                              CodeInvalidDocumentPath,
	"/abs":                              CodeInvalidDocumentPath,
	"a/./b":                             CodeInvalidDocumentPath,
	`a\b`:                               CodeInvalidDocumentPath,
	"a\x00b":                            CodeNullCharactersNotAllowed,
	"a\nb":                              CodeInvalidDocumentPath,
	"":                                  CodeInvalidDocumentPath,
	"a//b":                              CodeInvalidDocumentPath,
	strings.Repeat("a/", 999) + "b.pdf": CodeInvalidDocumentPath, // 2,003 characters
}

func TestOddPathsRefusedOnEveryPathField(t *testing.T) {
	now := time.Date(2025, 6, 15, 12, 0, 0, 0, time.UTC)
	for p, code := range oddPaths {
		pj, _ := json.Marshal(p)
		notes := `{"import_supplier":"S","external_account_number":"E","notes":[{"body":"b","document_paths":[{"document_path":"ok.pdf"},{"document_path":` + string(pj) + `}]}]}`
		_, err := Decode([]byte(notes), CodeInvalidPayload, "x", func(r *NotesRequest) []FieldError { return r.Validate(now) })
		e, ok := AsError(err)
		if !ok {
			t.Fatalf("notes %.30q accepted", p)
		}
		wantErrs(t, e.Errors, code+"@notes.0.document_paths.1.document_path")

		sts := `{"import_supplier":"S","external_account_number":"E","statements":[{"statement_id":"A","bill_period_from_date":"2025-05-01",
			"bill_period_to_date":"2025-05-31","statement_path":` + string(pj) + `}]}`
		_, err = Decode([]byte(sts), CodeInvalidPayload, "x", func(r *StatementsRequest) []FieldError { return r.Validate(Date{2025, 6, 15}) })
		if e, ok = AsError(err); !ok {
			t.Fatalf("statement %.30q accepted", p)
		}
		wantErrs(t, e.Errors, code+"@statements.0.statement_path")
	}
	// The path rules themselves also refuse NUL (a control character).
	if _, ok := ValidateDocumentPath("a\x00b.pdf"); ok {
		t.Error("NUL accepted by ValidateDocumentPath")
	}
	if _, ok := ValidatePDFDocumentPath("a/../b.pdf"); ok {
		t.Error("ValidatePDFDocumentPath skips the general rules")
	}
}

func TestParseBoolFlag(t *testing.T) {
	for in, want := range map[string]int{ // 1 true, 0 false, -1 refused
		"true": 1, "TRUE": 1, "True": 1, "1": 1, "false": 0, "FALSE": 0, "fAlSe": 0, "0": 0,
		"": -1, "yes": -1, "no": -1, "t": -1, "f": -1, "2": -1, " true": -1, "true ": -1, "01": -1, "-1": -1, "on": -1,
	} {
		v, ok := ParseBoolFlag(in)
		got := -1
		if ok {
			got = map[bool]int{true: 1, false: 0}[v]
		}
		if got != want {
			t.Errorf("ParseBoolFlag(%q) = %v,%v", in, v, ok)
		}
	}
}

func TestStoredAmountBound(t *testing.T) {
	tx := func(amount string) []byte {
		return []byte(`{"import_supplier":"S","external_account_number":"E","transactions":[{"transaction_id":"C","transaction_date":"2025-06-01",
			"amount":` + amount + `,"type":"CHARGE","reason":"IMPORTED_CHARGE"}]}`)
	}
	for amount, want := range map[string][]string{
		"99999999999999.99":   nil,
		"100000000000000":     {"max_whole_digits@transactions.0.amount"},
		"1000000000000000000": {"max_whole_digits@transactions.0.amount"}, // 19 digits: refused by the decoder
		"0.1":                 nil,
		"1.001":               {"max_decimal_places@transactions.0.amount"},
		"1.000":               nil, // the value has two places or fewer
	} {
		_, err := Decode(tx(amount), CodeInvalidPayload, "x", (*TransactionsRequest).Validate)
		var got []FieldError
		if e, ok := AsError(err); ok {
			got = e.Errors
		}
		t.Run(amount, func(t *testing.T) { wantErrs(t, got, want...) })
	}
}

func TestStoredTransactionJSON(t *testing.T) {
	orig, placed := Date{2025, 5, 20}, Date{2025, 6, 1}
	s := StoredTransaction{Transaction: Transaction{TransactionID: "X", TransactionDate: placed, Amount: mustMoney(t, "0.3"), Type: TransactionCharge},
		OriginalTransactionDate: &orig, Description: MovedDescription(orig, placed)}
	got := string(encode(t, TransactionResult{Status: TransactionAddedToAccount, TransactionData: s}))
	want := `{"status":"TRANSACTION_ADDED_TO_ACCOUNT","transaction_data":{"transaction_id":"X","transaction_date":"2025-06-01","amount":"0.30",` +
		`"type":"CHARGE","original_transaction_date":"2025-05-20","description":"Transaction date moved from 2025-05-20 to 2025-06-01 to fall within the open statement period."}}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if !s.Moved() || (&StoredTransaction{}).Moved() {
		t.Error("Moved")
	}
	e := TransactionImportError("bad", s.Transaction)
	if e.Code != CodeTransactionImportError || e.Extra["status"] != "TRANSACTION_IMPORT_ERROR" || e.Extra["error_detail"] != "bad" {
		t.Errorf("%+v", e)
	}
	if n := MovedNote(2, placed, Date{2025, 6, 30}); !*n.IsPinned || *n.Body != MovedNoteBody(2, placed, Date{2025, 6, 30}) {
		t.Errorf("%+v", n)
	}
}

func TestStatementsAlreadyExist(t *testing.T) {
	e := StatementsAlreadyExist(map[int]string{3: "B", 0: "A"})
	if e.Code != CodeHistoricalStatementAlreadyExists || len(e.Errors) != 2 ||
		e.Errors[0].Attr != "statements.0.statement_id" || e.Errors[1].Attr != "statements.3.statement_id" ||
		e.Errors[1].Code != CodeHistoricalStatementAlreadyExists {
		t.Errorf("%+v", e)
	}
}
