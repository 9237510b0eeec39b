package dataimport

import (
	"strings"
	"testing"
	"time"
)

func TestValidateDocumentPath(t *testing.T) {
	for _, tc := range []struct {
		p  string
		ok bool
	}{
		{"statements/2025/05.pdf", true},
		{"a.pdf", true},
		{"dir/.hidden/file.pdf", true}, // ".hidden" is a name, not a "." segment
		{"dir/..file.pdf", true},
		{"répertoire/fiche.pdf", true},
		{strings.Repeat("a", 1024), true},
		{strings.Repeat("a", 1025), false},
		{"", false},
		{"/abs/path.pdf", false},
		{"dir\\file.pdf", false},
		{"./file.pdf", false},
		{"dir/../../etc/passwd", false},
		{"dir/..", false},
		{"dir//file.pdf", false},
		{"dir/", false},
		{"dir/fi\nle.pdf", false},
		{"dir/fi\x7fle.pdf", false},
		{"dir/fi\u0085le.pdf", false}, // C1 control
	} {
		code, ok := ValidateDocumentPath(tc.p)
		if ok != tc.ok || (!ok && code != CodeInvalidDocumentPath) || (ok && code != "") {
			t.Errorf("%.40q: got (%q,%v) want ok=%v", tc.p, code, ok, tc.ok)
		}
	}
}

func TestValidateNote(t *testing.T) {
	now := time.Date(2025, 6, 15, 12, 0, 0, 500, time.FixedZone("BST", 3600))
	dt := func(s string) *DateTime {
		v, err := ParseDateTime(s)
		if err != nil {
			t.Fatal(err)
		}
		return &v
	}
	str := func(s string) *string { return &s }
	cases := []struct {
		name string
		note Note
		now  time.Time
		want []string
	}{
		{"body only", Note{Body: str("hi")}, now, nil},
		{"document only", Note{DocumentPaths: []NoteDocumentPath{{"a/b.pdf"}}}, now, nil},
		{"neither", Note{IsPinned: ptr(true)}, now, []string{"note_body_or_document_path_not_found@notes.3"}},
		{"blank body, no docs", Note{Body: str("")}, now, []string{"note_body_or_document_path_not_found@notes.3"}},
		{"bad paths", Note{Body: str("x"), DocumentPaths: []NoteDocumentPath{{"ok.pdf"}, {"/abs.pdf"}, {""}}}, now,
			[]string{"invalid_document_path@notes.3.document_paths.1.document_path", "invalid_document_path@notes.3.document_paths.2.document_path"}},
		{"unpin before created", Note{Body: str("x"), CreatedAt: dt("2025-01-02T00:00:00Z"), UnpinAt: dt("2025-01-01T23:59:59Z")}, now,
			[]string{"note_unpin_at_earlier_than_creation_date@notes.3.unpin_at"}},
		{"unpin equal to created ok", Note{Body: str("x"), CreatedAt: dt("2025-01-02T00:00:00Z"), UnpinAt: dt("2025-01-02T01:00:00+01:00")}, now, nil},
		{"unpin before default created_at (now)", Note{Body: str("x"), UnpinAt: dt("2025-06-15T10:00:00Z")}, now,
			[]string{"note_unpin_at_earlier_than_creation_date@notes.3.unpin_at"}},
		{"no now: unpin not compared", Note{Body: str("x"), UnpinAt: dt("2000-01-01T00:00:00Z")}, time.Time{}, nil},
		{"body too long", Note{Body: str(strings.Repeat("x", maxNoteBody+1))}, now, []string{"max_length@notes.3.body"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.note
			wantErrs(t, ValidateNote(&n, "notes.3", tc.now), tc.want...)
			if n.IsPinned == nil {
				t.Error("is_pinned not defaulted")
			}
			if tc.note.CreatedAt == nil && !tc.now.IsZero() && n.CreatedAt.String() != "2025-06-15T11:00:00Z" {
				t.Errorf("created_at default = %v", n.CreatedAt)
			}
			if tc.now.IsZero() && tc.note.CreatedAt == nil && n.CreatedAt != nil {
				t.Error("created_at filled without now")
			}
		})
	}
}

// supplyCharge is a valid SUPPLY_CHARGE body used as the base for mutations.
const supplyCharge = `{"transaction_id":"S1","transaction_date":"2025-06-10","amount":"30.03","type":"SUPPLY_CHARGE",
 "product_code":"P","line_items":[
   {"start_date":"2025-06-01","end_date":"2025-06-30","number_of_units":"10.5","price_per_unit":"2.345","net_amount":"24.62"},
   {"start_date":"2025-06-01","end_date":"2025-06-01","net_amount":"4.00"}],
 "tax_items":[{"amount":"1.41","tax_type":"VAT","value_taxed":"28.62","rate":"0.05","unit_type":"PROPORTION"}]}`

func TestValidateTransactions(t *testing.T) {
	body := func(txs ...string) []byte {
		return []byte(`{"import_supplier":"DEMO_ENERGY","external_account_number":"EXT-0001","transactions":[` + strings.Join(txs, ",") + `]}`)
	}
	charge := `{"transaction_id":"C1","transaction_date":"2025-06-01","amount":10,"type":"CHARGE","reason":"IMPORTED_CHARGE"}`
	credit := `{"transaction_id":"C2","transaction_date":"2025-06-01","amount":"0.01","type":"CREDIT","reason":"GENERAL_CREDIT"}`
	payment := `{"transaction_id":"P1","transaction_date":"2025-06-01","amount":55,"type":"PAYMENT","payment_type":"DEBIT_CARD","reference":"R"}`
	repay := `{"transaction_id":"P2","transaction_date":"2025-06-01","amount":5,"type":"REPAYMENT","payment_type":"DIRECT_CREDIT"}`
	sub := func(s, old, new string) string {
		if !strings.Contains(s, old) {
			t.Fatalf("fixture lacks %q", old)
		}
		return strings.Replace(s, old, new, 1)
	}
	cases := []struct {
		name string
		body []byte
		want []string
	}{
		{"all types valid", body(charge, credit, payment, repay, supplyCharge), nil},
		{"required for every type", body(`{"type":"CHARGE","reason":"IMPORTED_CHARGE"}`, `{}`),
			[]string{"required@transactions.0.transaction_id", "required@transactions.0.transaction_date", "required@transactions.0.amount",
				"required@transactions.1.transaction_id", "required@transactions.1.transaction_date", "required@transactions.1.amount", "required@transactions.1.type"}},
		{"amount must be positive", body(sub(charge, `10`, `0`), sub(credit, `"0.01"`, `-1`)),
			[]string{"amount_must_be_positive@transactions.0.amount", "amount_must_be_positive@transactions.1.amount"}},
		{"amount places", body(sub(charge, `10`, `10.001`)), []string{"max_decimal_places@transactions.0.amount"}},
		{"per-type fields", body(sub(charge, `,"reason":"IMPORTED_CHARGE"`, ``), sub(credit, `,"reason":"GENERAL_CREDIT"`, ``),
			sub(payment, `,"payment_type":"DEBIT_CARD"`, ``), sub(repay, `,"payment_type":"DIRECT_CREDIT"`, ``),
			sub(sub(supplyCharge, `"product_code":"P",`, ``), `"transaction_id":"S1"`, `"transaction_id":"S2"`)),
			[]string{"required@transactions.0.reason", "required@transactions.1.reason", "required@transactions.2.payment_type",
				"required@transactions.3.payment_type", "required@transactions.4.product_code"}},
		{"supply charge needs line items", body(`{"transaction_id":"S","transaction_date":"2025-06-01","amount":1,"type":"SUPPLY_CHARGE","product_code":"P"}`),
			[]string{"required@transactions.0.line_items"}},
		{"invalid enums", body(sub(charge, `IMPORTED_CHARGE`, `BECAUSE`), sub(payment, `DEBIT_CARD`, `CHEQUE`), sub(repay, `"REPAYMENT"`, `"REFUND"`),
			sub(sub(sub(supplyCharge, `"tax_type":"VAT"`, `"tax_type":"GST"`), `"unit_type":"PROPORTION"`, `"unit_type":"FIXED"`),
				`"start_date":"2025-06-01","end_date":"2025-06-01"`, `"rate_band":"NIGHT","start_date":"2025-06-01","end_date":"2025-06-01"`)),
			[]string{"invalid_choice@transactions.0.reason", "invalid_choice@transactions.1.payment_type", "invalid_choice@transactions.2.type",
				"invalid_choice@transactions.3.tax_items.0.tax_type", "invalid_choice@transactions.3.tax_items.0.unit_type",
				"invalid_choice@transactions.3.line_items.1.rate_band"}},
		{"supply charge sum", body(sub(supplyCharge, `"30.03"`, `"30.04"`)), []string{"supply_charge_amount_mismatch@transactions.0.amount"}},
		{"net amount = units x price rounded", body(sub(sub(supplyCharge, `"24.62"`, `"24.63"`), `"30.03"`, `"30.04"`)),
			[]string{"line_item_net_amount_mismatch@transactions.0.line_items.0.net_amount"}},
		{"price without units", body(sub(supplyCharge, `"number_of_units":"10.5",`, ``)),
			[]string{"required@transactions.0.line_items.0.number_of_units"}},
		{"line item dates", body(sub(supplyCharge, `"end_date":"2025-06-30"`, `"end_date":"2025-05-31"`)),
			[]string{"start_date_later_than_end_date@transactions.0.line_items.0.end_date"}},
		{"tax item fields required", body(sub(supplyCharge, `{"amount":"1.41","tax_type":"VAT","value_taxed":"28.62","rate":"0.05","unit_type":"PROPORTION"}`, `{"amount":"1.41"}`)),
			[]string{"required@transactions.0.tax_items.0.tax_type", "required@transactions.0.tax_items.0.value_taxed",
				"required@transactions.0.tax_items.0.rate", "required@transactions.0.tax_items.0.unit_type"}},
		{"tax money places", body(sub(sub(supplyCharge, `"value_taxed":"28.62"`, `"value_taxed":"28.625"`), `"1.41"`, `"1.411"`)),
			[]string{"max_decimal_places@transactions.0.tax_items.0.value_taxed", "max_decimal_places@transactions.0.tax_items.0.amount",
				"supply_charge_amount_mismatch@transactions.0.amount"}},
		{"duplicate ids", body(charge, charge, credit, charge),
			[]string{"duplicate_transaction_ids@transactions.1.transaction_id", "duplicate_transaction_ids@transactions.3.transaction_id"}},
		{"ids trimmed before comparing", body(charge, sub(charge, `"C1"`, `" C1 "`)), []string{"duplicate_transaction_ids@transactions.1.transaction_id"}},
		{"unknown field in line item", body(sub(supplyCharge, `"net_amount":"4.00"`, `"net_amount":"4.00","vat":1`)),
			[]string{"unknown_field@transactions.0.line_items.1.vat"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.body, CodeInvalidPayload, "Invalid payload.", (*TransactionsRequest).Validate)
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

func TestSupplyChargeExactArithmetic(t *testing.T) {
	// 0.1 + 0.2 must equal 0.3 exactly (it does not in float64).
	tx := `{"import_supplier":"S","external_account_number":"E","transactions":[{"transaction_id":"S","transaction_date":"2025-06-01",
	 "amount":0.3,"type":"SUPPLY_CHARGE","product_code":"P","line_items":[
	 {"start_date":"2025-06-01","end_date":"2025-06-01","net_amount":0.1},
	 {"start_date":"2025-06-01","end_date":"2025-06-01","net_amount":0.2}]}]}`
	r, err := Decode([]byte(tx), CodeInvalidPayload, "Invalid payload.", (*TransactionsRequest).Validate)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(encode(t, r.Transactions[0].Amount)); got != `"0.30"` {
		t.Errorf("amount rendered %s", got)
	}
	// Rounding half away from zero: 0.125 -> 0.13.
	li := LineItem{NumberOfUnits: ptrDec(t, "0.5"), PricePerUnit: ptrDec(t, "0.25"), NetAmount: mustMoney(t, "0.13")}
	c := &collector{}
	validateLineItem(c, &li, objectAt("li"))
	wantErrs(t, c.errs)
}

func TestNotesRequest(t *testing.T) {
	now := time.Date(2025, 6, 15, 9, 0, 0, 0, time.UTC)
	body := `{"import_supplier":"DEMO_ENERGY","external_account_number":"EXT-0001","notes":[{"body":"a"},{"is_pinned":true},{"body":"b","colour":1}]}`
	_, err := Decode([]byte(body), CodeInvalidPayload, "Invalid payload.", func(r *NotesRequest) []FieldError { return r.Validate(now) })
	e, ok := AsError(err)
	if !ok {
		t.Fatalf("want validation error, got %v", err)
	}
	wantErrs(t, e.Errors, "note_body_or_document_path_not_found@notes.1", "unknown_field@notes.2.colour")

	r, err := Decode([]byte(`{"import_supplier":"S","external_account_number":"E","notes":[{"body":"a"}]}`), CodeInvalidPayload, "Invalid payload.",
		func(r *NotesRequest) []FieldError { return r.Validate(now) })
	if err != nil || r.Notes[0].CreatedAt.String() != "2025-06-15T09:00:00Z" {
		t.Fatalf("%v %+v", err, r)
	}
	_, err = Decode([]byte(`[]`), CodeInvalidPayload, "Invalid payload.", func(r *NotesRequest) []FieldError { return r.Validate(now) })
	if e, ok := AsError(err); !ok || e.Code != CodeInvalidPayload || e.Errors[0].Attr != "non_field_errors" {
		t.Fatalf("non-object: %v", err)
	}
}
