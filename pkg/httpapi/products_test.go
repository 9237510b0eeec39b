package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

const (
	productsPath         = "/v1/data-import/products/"
	upsertProductsPath   = "/v1/data-import/products/create-or-update/"
	validateProductsPath = "/v1/data-import/validate-products/"
)

// catalogue is one product with an electricity and a gas tariff; without
// gas it drops the gas tariff (an update that strands gas agreements).
func catalogue(gas bool, elecRate string) string {
	tariffs := `{"tariff_code": "E-1R-DEMO-VAR-A", "fuel": "ELECTRICITY", "region": "A", "payment_method": "DIRECT_DEBIT",
		"unit_rates": [{"rate_type": "STANDARD", "value": "` + elecRate + `", "valid_from": "2024-01-01"}],
		"standing_charges": [{"value": "53.35", "valid_from": "2024-01-01"}]}`
	if gas {
		tariffs += `, {"tariff_code": "G-1R-DEMO-VAR-A", "fuel": "GAS", "unit_rates": [{"rate_type": "STANDARD", "value": 6.04, "valid_from": "2024-01-01"}]}`
	}
	return `{"products": [{"code": "DEMO-VAR-24-02", "full_name": "Demo Variable", "display_name": "Variable",
		"available_from": "2024-01-01", "is_variable": true, "tariffs": [` + tariffs + `]}]}`
}

// tariffAccount is the sample account with its agreements on the
// catalogue's tariffs (its SUPPLY_CHARGE names product DEMO-VAR-24-02).
func tariffAccount(t *testing.T, external string) string {
	a := account(t, external)
	for _, r := range [][2]string{
		{`"product_code": "DEMO-FIX-12M-24-02-G"`, `"tariff_code": "G-1R-DEMO-VAR-A"`},
		{`"product_code": "DEMO-VAR-24-02-G"`, `"tariff_code": "G-1R-DEMO-VAR-A"`},
		{`"product_code": "DEMO-FIX-12M-24-02"`, `"tariff_code": "E-1R-DEMO-VAR-A"`},
		{`{"product_code": "DEMO-VAR-24-02"`, `{"tariff_code": "E-1R-DEMO-VAR-A"`},
	} {
		if !strings.Contains(a, r[0]) {
			t.Fatalf("fixture changed: no %s", r[0])
		}
		a = strings.Replace(a, r[0], r[1], 1)
	}
	return a
}

func TestProductCatalogueGatesAgreements(t *testing.T) {
	st := testutil.NewStack(t)
	ctx := context.Background()
	st.Supplier("DEMO_ENERGY")
	on := true
	if _, err := st.DB.UpdateSupplierSettings(ctx, "DEMO_ENERGY", postgres.SupplierSettings{RequireProducts: &on}); err != nil {
		t.Fatal(err)
	}
	partner := st.Tenant("Partner", "DEMO_ENERGY")
	ops := st.ScopedTenant("Catalogue Ops", []string{dataimport.ScopeProducts}, "DEMO_ENERGY")

	// Nothing in the catalogue: the tariff and the supply charge's product are unknown.
	r := st.As(partner.Token, http.MethodPost, stagePath, tariffAccount(t, "EXT-CAT"))
	assertEnvelope(t, r, http.StatusBadRequest, "account_failed_validation")
	errs := fieldErrors(t, r)
	if errs["supply_addresses.0.meter_points.0.agreements.0.tariff_code"] != "tariff_code_not_found" ||
		errs["supply_addresses.0.meter_points.1.agreements.1.tariff_code"] != "tariff_code_not_found" {
		t.Fatalf("errors: %v", errs)
	}
	found := false
	for attr, code := range errs {
		found = found || (strings.HasPrefix(attr, "current_statement_transactions.") && strings.HasSuffix(attr, ".product_code") && code == "product_not_found")
	}
	if !found {
		t.Errorf("SUPPLY_CHARGE product not checked: %v", errs)
	}

	// A key without the products scope may read the catalogue, not write it.
	r = st.As(partner.Token, http.MethodPost, upsertProductsPath, catalogue(true, "24.5"))
	assertEnvelope(t, r, http.StatusForbidden, "permission_denied")
	if r := st.As(partner.Token, http.MethodGet, productsPath, nil); r.Status != http.StatusOK || strings.TrimSpace(string(r.Body)) != "[]" {
		t.Fatalf("empty list: %d %s", r.Status, r.Body)
	}

	r = st.As(ops.Token, http.MethodPost, upsertProductsPath, catalogue(true, "24.5"))
	if r.Status != http.StatusCreated || !strings.Contains(string(r.Body), `"created":true`) {
		t.Fatalf("load products: %d %s", r.Status, r.Body)
	}
	if r := st.As(partner.Token, http.MethodPost, stagePath, tariffAccount(t, "EXT-CAT")); r.Status != http.StatusCreated {
		t.Fatalf("stage after loading the product: %d %s", r.Status, r.Body)
	}
	// A gas tariff on an electricity meter point is refused.
	mismatch := strings.Replace(tariffAccount(t, "EXT-CAT-2"), `"tariff_code": "E-1R-DEMO-VAR-A"`, `"tariff_code": "G-1R-DEMO-VAR-A"`, 1)
	r = st.As(partner.Token, http.MethodPost, validatePath, mismatch)
	assertEnvelope(t, r, http.StatusBadRequest, "account_failed_validation")
	if errs := fieldErrors(t, r); errs["supply_addresses.0.meter_points.0.agreements.0.tariff_code"] != "tariff_fuel_mismatch" {
		t.Fatalf("errors: %v", errs)
	}

	// Dropping the gas tariff would strand the staged account's gas agreements.
	r = st.As(ops.Token, http.MethodPost, upsertProductsPath, catalogue(false, "24.5"))
	assertEnvelope(t, r, http.StatusBadRequest, "product_in_use")
	if !strings.Contains(string(r.Body), "EXT-CAT") || fieldErrors(t, r)["products.0.code"] != "product_in_use" {
		t.Fatalf("refusal does not name the account: %s", r.Body)
	}
	r = st.As(partner.Token, http.MethodGet, productsPath+"DEMO-VAR-24-02/", nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "G-1R-DEMO-VAR-A") || !strings.Contains(string(r.Body), `"24.5000"`) {
		t.Fatalf("refused update changed the product: %d %s", r.Status, r.Body)
	}
	// A price change keeps every agreement valid: updated, not created.
	r = st.As(ops.Token, http.MethodPost, upsertProductsPath, catalogue(true, "25.1234"))
	if r.Status != http.StatusCreated || !strings.Contains(string(r.Body), `"created":false`) {
		t.Fatalf("price update: %d %s", r.Status, r.Body)
	}
	r = st.As(partner.Token, http.MethodGet, productsPath, nil)
	var list []dataimport.Product
	r.Decode(&list)
	if len(list) != 1 || len(list[0].Tariffs) != 2 || list[0].Tariffs[0].UnitRates[0].Value.String() != "25.1234" {
		t.Fatalf("list: %s", r.Body)
	}
	if r := st.As(partner.Token, http.MethodGet, productsPath+"NOPE/", nil); r.Status != http.StatusNotFound {
		t.Fatalf("unknown product: %d %s", r.Status, r.Body)
	}

	// validate-products: any key, every error at its path.
	bad := strings.Replace(catalogue(true, "24.12345"), `"value": 6.04`, `"value": 6.04, "colour": "green"`, 1)
	r = st.As(partner.Token, http.MethodPost, validateProductsPath, bad)
	assertEnvelope(t, r, http.StatusBadRequest, "invalid_payload")
	errs = fieldErrors(t, r)
	if errs["products.0.tariffs.0.unit_rates.0.value"] != "max_decimal_places" || errs["products.0.tariffs.1.unit_rates.0.colour"] != "unknown_field" {
		t.Fatalf("errors: %v", errs)
	}
	if r := st.As(partner.Token, http.MethodPost, validateProductsPath, catalogue(true, "1")); r.Status != http.StatusOK {
		t.Fatalf("validate-products: %d %s", r.Status, r.Body)
	}
}

// A supplier without require-products keeps today's behaviour: unknown
// product codes are accepted.
func TestCatalogueOffByDefault(t *testing.T) {
	st := testutil.NewStack(t)
	st.Supplier("FREE_ENERGY")
	ten := st.Tenant("Partner", "FREE_ENERGY")
	body := strings.Replace(tariffAccount(t, "EXT-FREE"), "DEMO_ENERGY", "FREE_ENERGY", 1)
	if r := st.As(ten.Token, http.MethodPost, stagePath, body); r.Status != http.StatusCreated {
		t.Fatalf("stage: %d %s", r.Status, r.Body)
	}
}

func TestGBMarketRules(t *testing.T) {
	st := testutil.NewStack(t)
	ctx := context.Background()
	st.Supplier("GB_ENERGY")
	st.Supplier("ANY_ENERGY")
	gb := "GB"
	if _, err := st.DB.UpdateSupplierSettings(ctx, "GB_ENERGY", postgres.SupplierSettings{Market: &gb}); err != nil {
		t.Fatal(err)
	}
	ten := st.Tenant("Partner", "GB_ENERGY", "ANY_ENERGY")
	body := func(supplier string) string {
		a := strings.Replace(account(t, "EXT-GB"), "DEMO_ENERGY", supplier, 1)
		return strings.Replace(a, `"1200023305967"`, `"1200023305968"`, 1) // wrong check digit
	}
	r := st.As(ten.Token, http.MethodPost, validatePath, body("GB_ENERGY"))
	assertEnvelope(t, r, http.StatusBadRequest, "account_failed_validation")
	if errs := fieldErrors(t, r); errs["supply_addresses.0.meter_points.0.mpxn"] != "invalid_mpan" || len(errs) != 1 {
		t.Fatalf("errors: %v", errs)
	}
	if r := st.As(ten.Token, http.MethodPost, validatePath, body("ANY_ENERGY")); r.Status != http.StatusOK {
		t.Fatalf("NONE supplier: %d %s", r.Status, r.Body)
	}
	// The real MPAN, a GB postcode and a known PSR code pass; others do not.
	good := strings.Replace(account(t, "EXT-GB"), "DEMO_ENERGY", "GB_ENERGY", 1)
	if r := st.As(ten.Token, http.MethodPost, validatePath, good); r.Status != http.StatusOK {
		t.Fatalf("GB valid account: %d %s", r.Status, r.Body)
	}
	bad := strings.Replace(good, `"supply_postcode": "SW1A 2AA"`, `"supply_postcode": "12345"`, 1)
	bad = strings.Replace(bad, `"given_name"`, `"psr": [{"code": "99"}], "given_name"`, 1)
	bad = strings.Replace(bad, `"7514321006"`, `"0514321006"`, 1)
	r = st.As(ten.Token, http.MethodPost, validatePath, bad)
	assertEnvelope(t, r, http.StatusBadRequest, "account_failed_validation")
	errs := fieldErrors(t, r)
	if errs["supply_addresses.0.supply_postcode"] != "invalid_postcode" || errs["customers.0.psr.0.code"] != "invalid_psr_code" ||
		errs["supply_addresses.0.meter_points.1.mpxn"] != "invalid_mprn" {
		t.Fatalf("errors: %v", errs)
	}
}
