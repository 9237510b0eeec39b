package dataimport

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// requestTypes are the bodies this package decodes; the HTTP layer's test
// (pkg/httpapi) checks that every POST route's body is one of them or is
// bounded the same way.
var requestTypes = []reflect.Type{
	reflect.TypeFor[Account](),
	reflect.TypeFor[NotesRequest](),
	reflect.TypeFor[TransactionsRequest](),
	reflect.TypeFor[StatementsRequest](),
	reflect.TypeFor[PaymentInstructionRequest](),
	reflect.TypeFor[ProductsRequest](),
}

// Every array reachable from a request body declares its maximum, so no
// body can make the decoder build an unbounded list. The walk reads the
// struct tags itself rather than trusting the decoder's table.
func TestEveryArrayHasAMaximum(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type, path string)
	walk = func(typ reflect.Type, path string) {
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || isLeafType(typ) || seen[typ] {
			return
		}
		seen[typ] = true
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			ft := f.Type
			if ft.Kind() == reflect.Slice {
				max := 0
				for _, opt := range strings.Split(f.Tag.Get("dataimport"), ",") {
					fmt.Sscanf(opt, "max=%d", &max)
				}
				if max < 1 {
					t.Errorf("%s.%s (%s.%s) has no maximum: tag it dataimport:\"max=N\" and document it (openapi.json maxItems, README)",
						path, name, typ, f.Name)
				}
				ft = ft.Elem()
			}
			walk(ft, path+"."+name)
		}
	}
	for _, rt := range requestTypes {
		walk(rt, rt.Name())
		if _, err := BodyFields(rt); err != nil {
			t.Errorf("%s: %v", rt, err)
		}
	}
	if len(seen) < 15 {
		t.Fatalf("walked only %d types: the walk is broken", len(seen))
	}
}

// The decoder itself refuses a type with an unbounded array, so one added
// later fails loudly in its first test instead of shipping unbounded.
func TestDecoderRefusesUnboundedArray(t *testing.T) {
	type inner struct {
		X []string `json:"x"`
	}
	type outer struct {
		In *inner `json:"in"`
	}
	type nested struct {
		X [][]string `json:"x" dataimport:"max=2"`
	}
	type badMax struct {
		X []string `json:"x" dataimport:"max=0"`
	}
	type maxOnScalar struct {
		X string `json:"x" dataimport:"max=3"`
	}
	for _, dst := range []any{&inner{}, &outer{}, &nested{}, &badMax{}, &maxOnScalar{}} {
		if _, err := DecodeStrict([]byte(`{}`), dst); err == nil || ErrorCode(err) != "" {
			t.Errorf("%T: want a programming error, got %v", dst, err)
		}
	}
}

func TestMaxItems(t *testing.T) {
	items := func(n int, item string) string { return strings.TrimSuffix(strings.Repeat(item+",", n), ",") }
	// At the maximum: accepted.
	var ok decTarget
	errs, err := DecodeStrict([]byte(`{"in":{"name":"a","tags":[`+items(3, `"t"`)+`]},"list":[`+items(2, `{"name":"n"}`)+`]}`), &ok)
	if err != nil || len(errs) != 0 || len(ok.In.Tags) != 3 || len(ok.List) != 2 {
		t.Fatalf("at the maximum: %v %s %+v", err, dump(errs), ok)
	}
	// One past it, at any depth: one max_items on the array; the items
	// beyond are skipped unread (their own errors are not reported).
	var v decTarget
	errs, err = DecodeStrict([]byte(`{"in":{"name":"a","tags":[`+items(4, `"t"`)+`]},"list":[{"name":"n"},{"name":"n"},{"bad":1},{"bad":2}],`+
		`"decs":[`+items(100000, `"x"`)+`]}`), &v)
	if err != nil {
		t.Fatal(err)
	}
	wantErrs(t, errs, "max_items@in.tags", "max_items@list", "max_items@decs",
		"invalid_decimal@decs.0", "invalid_decimal@decs.1", "invalid_decimal@decs.2", "invalid_decimal@decs.3", "invalid_decimal@decs.4",
		"invalid_decimal@decs.5", "invalid_decimal@decs.6", "invalid_decimal@decs.7", "invalid_decimal@decs.8", "invalid_decimal@decs.9")
	if len(v.In.Tags) != 3 || len(v.List) != 2 || len(v.Decs) != 10 {
		t.Errorf("kept %d tags, %d items, %d decimals; want the first 3, 2, 10", len(v.In.Tags), len(v.List), len(v.Decs))
	}
	for _, e := range errs {
		if e.Code == CodeMaxItems && !strings.Contains(e.Detail, "no more than") {
			t.Errorf("detail %q", e.Detail)
		}
	}
}

// The account's own arrays, through the real entry point.
func TestAccountArrayMaxima(t *testing.T) {
	m := generic(t, validAccountJSON(t))
	customers := m["customers"].([]any)
	for len(customers) <= 50 {
		customers = append(customers, customers[0])
	}
	m["customers"] = customers
	sa := m["supply_addresses"].([]any)[0].(map[string]any)
	mp := sa["meter_points"].([]any)[0].(map[string]any)
	ags := mp["agreements"].([]any)
	for len(ags) <= 20 {
		ags = append(ags, ags[0])
	}
	mp["agreements"] = ags
	_, errs := accountErrors(t, encode(t, m))
	wantErrs(t, errs, "max_items@customers", "max_items@supply_addresses.0.meter_points.0.agreements")
}

// tooMany is comfortably more errors than the cap.
const tooMany = 3 * MaxReportedErrors

// checkCapped asserts the one shape of a capped list: at most
// MaxReportedErrors errors, then exactly one too_many_errors.
func checkCapped(t *testing.T, name string, errs []FieldError) {
	t.Helper()
	if len(errs) != MaxReportedErrors+1 {
		t.Errorf("%s: %d errors, want %d then too_many_errors", name, len(errs), MaxReportedErrors)
		return
	}
	for i, e := range errs {
		if (e.Code == CodeTooManyErrors) != (i == MaxReportedErrors) {
			t.Errorf("%s: error %d is %s", name, i, e.Code)
		}
	}
}

// Every entry point that returns field errors stops at the cap: each rule,
// the merge, the binder and Decode for every body. The inputs are built in
// Go where the decoder's array maxima would stop a body first.
func TestErrorCapEveryEntryPoint(t *testing.T) {
	now := time.Date(2025, 6, 15, 9, 0, 0, 0, time.UTC)
	blankTx := make([]Transaction, tooMany)
	notes := make([]Note, tooMany) // each needs a body or a document path
	badPaths := make([]NoteDocumentPath, tooMany)
	for i := range badPaths {
		badPaths[i].DocumentPath = "/abs"
	}
	many := make([]FieldError, tooMany)
	for i := range many {
		many[i] = FieldError{Attr: fmt.Sprintf("x.%d", i), Code: CodeInvalid, Detail: "x"}
	}
	cases := map[string][]FieldError{
		"ValidateAccount":       ValidateAccount(&Account{Customers: make([]Customer, tooMany)}, testRules),
		"ValidateAccount notes": ValidateAccount(&Account{Notes: notes}, testRules),
		"ValidateNote":          ValidateNote(&Note{DocumentPaths: badPaths}, "notes.0", now),
		"ValidateTransactions":  ValidateTransactions(blankTx, "transactions"),
		"NotesRequest.Validate": (&NotesRequest{Notes: notes}).Validate(now),
		"TransactionsRequest":   (&TransactionsRequest{Transactions: blankTx}).Validate(),
		"StatementsRequest":     (&StatementsRequest{Statements: make([]HistoricalStatement, tooMany)}).Validate(Date{}),
		"ProductsRequest":       (&ProductsRequest{Products: make([]Product, tooMany)}).Validate(),
		"ValidateAccount meters": ValidateAccount(&Account{SupplyAddresses: []SupplyAddress{{MeterPoints: []MeterPoint{{
			Meters: make([]Meter, tooMany)}}}}}, testRules),
		"ValidateAccount PSR":       ValidateAccount(&Account{Customers: []Customer{{PSR: make([]PSREntry, tooMany)}}}, testRules),
		"MergeFieldErrors":          MergeFieldErrors(many, many),
		"MergeFieldErrors rules":    MergeFieldErrors(nil, many),
		"MergeFieldErrors capped":   MergeFieldErrors(JoinFieldErrors(many), JoinFieldErrors(many)),
		"JoinFieldErrors":           JoinFieldErrors(many[:10], many, many[:10]),
		"JoinFieldErrors of capped": JoinFieldErrors(JoinFieldErrors(many), JoinFieldErrors(many)),
	}
	unknown := `{` + strings.TrimSuffix(strings.Repeat(`"u":1,"v":2,`, tooMany), ",") + `}`
	errs, err := DecodeStrict([]byte(unknown), &decTarget{})
	if err != nil {
		t.Fatal(err)
	}
	cases["DecodeStrict"] = errs
	bodies := map[string]func([]byte) error{
		"DecodeAccount": func(b []byte) error { _, err := DecodeAccount(b, testRules); return err },
		"Decode notes": func(b []byte) error {
			_, err := Decode(b, CodeInvalidPayload, "x", func(r *NotesRequest) []FieldError { return r.Validate(now) })
			return err
		},
		"Decode transactions": func(b []byte) error {
			_, err := Decode(b, CodeInvalidPayload, "x", (*TransactionsRequest).Validate)
			return err
		},
		"Decode statements": func(b []byte) error {
			_, err := Decode(b, CodeInvalidPayload, "x", func(r *StatementsRequest) []FieldError { return r.Validate(Date{}) })
			return err
		},
		"DecodeProducts": func(b []byte) error { _, err := DecodeProducts(b); return err },
		"Decode payment instruction": func(b []byte) error {
			_, err := Decode(b, CodeInvalidPayload, "x", PaymentInstructionValidator(nil))
			return err
		},
	}
	for name, decode := range bodies {
		e, ok := AsError(decode([]byte(unknown)))
		if !ok {
			t.Fatalf("%s: no domain error", name)
		}
		cases[name] = e.Errors
	}
	for name, errs := range cases {
		checkCapped(t, name, errs)
	}
}

// A list under the cap keeps every error and gets no marker.
func TestCollectorUnderTheCap(t *testing.T) {
	var c collector
	for i := range MaxReportedErrors {
		c.add(fmt.Sprintf("a.%d", i), CodeInvalid, "x")
	}
	if got := c.list(); len(got) != MaxReportedErrors || got[len(got)-1].Code == CodeTooManyErrors {
		t.Fatalf("%d errors, last %s", len(got), got[len(got)-1].Code)
	}
	c.add("one.more", CodeInvalid, "x")
	checkCapped(t, "one past", c.list())
}
