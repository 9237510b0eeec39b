package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// badKind is one way a job line is wrong: the field error it must get.
type badKind struct {
	code, attr string
	edit       func(a map[string]any)
}

func at(a map[string]any, path ...any) map[string]any {
	var v any = a
	for _, p := range path {
		switch k := p.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	return v.(map[string]any)
}

// badKinds are the five kinds of bad line of issue 31's Failures view: a
// bad MPAN, an unknown tariff, a bad phone, an impossible date, a balance
// out of range (the supplier: market GB, products required).
var badKinds = []badKind{
	{"invalid_mpan", "supply_addresses.0.meter_points.0.mpxn", func(a map[string]any) {
		at(a, "supply_addresses", 0, "meter_points", 0)["mpxn"] = "1200023305968" // wrong check digit
	}},
	{"tariff_code_not_found", "supply_addresses.0.meter_points.0.agreements.1.tariff_code", func(a map[string]any) {
		ag := at(a, "supply_addresses", 0, "meter_points", 0, "agreements", 1)
		delete(ag, "product_code")
		ag["tariff_code"] = "E-1R-NO-SUCH-TARIFF"
	}},
	{"invalid_phone_number", "customers.0.mobile", func(a map[string]any) { at(a, "customers", 0)["mobile"] = "12345" }},
	{"invalid_date", "date_of_sale", func(a map[string]any) { a["date_of_sale"] = "2024-02-30" }},
	{"balance_out_of_range", "current_statement_transactions.0.amount", func(a map[string]any) { a["transfer_balance"] = "99999999999999.99" }},
}

// catalogueSupplier creates supplier code with market GB, products
// required and the demo catalogue loaded, so that every bad kind applies.
func catalogueSupplier(t testing.TB, st *testutil.Stack, code string) {
	t.Helper()
	ctx := context.Background()
	st.Supplier(code)
	on, gb := true, "GB"
	if _, err := st.DB.UpdateSupplierSettings(ctx, code, postgres.SupplierSettings{RequireProducts: &on, Market: &gb}); err != nil {
		t.Fatal(err)
	}
	raw, err := testutil.ReadRepoFile("deploy/local/demo_products.json")
	if err != nil {
		t.Fatal(err)
	}
	req, err := dataimport.DecodeProducts(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB.UpsertProducts(ctx, req.Products); err != nil {
		t.Fatal(err)
	}
}

// failingJob is an NDJSON body of n lines for supplier, every every-th
// line bad (cycling through badKinds), how many lines each (code, attr)
// must count, and each bad line's (code, attr).
func failingJob(t testing.TB, supplier string, n, every int) ([]byte, map[[2]string]int64, map[int][2]string) {
	t.Helper()
	raw, err := testutil.ReadRepoFile("pkg/dataimport/testdata/account_valid.json")
	if err != nil {
		t.Fatal(err)
	}
	want, byLine := map[[2]string]int64{}, map[int][2]string{}
	var body []byte
	for i := 1; i <= n; i++ {
		var a map[string]any
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatal(err)
		}
		a["import_supplier"], a["external_account_number"] = supplier, fmt.Sprintf("JOB-%05d", i)
		if i%every == 0 {
			k := badKinds[(i/every)%len(badKinds)]
			k.edit(a)
			want[[2]string{k.code, k.attr}]++
			byLine[i] = [2]string{k.code, k.attr}
		}
		line, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		body = append(append(body, line...), '\n')
	}
	return body, want, byLine
}
