package dataimport

import (
	"os"
	"testing"
)

func productErrors(t *testing.T, body []byte) []FieldError {
	t.Helper()
	_, err := DecodeProducts(body)
	if err == nil {
		return nil
	}
	e, ok := AsError(err)
	if !ok || e.Code != CodeInvalidPayload {
		t.Fatalf("unexpected error %v", err)
	}
	return e.Errors
}

func TestProductRules(t *testing.T) {
	t.Parallel()
	sample, err := os.ReadFile("testdata/products_valid.json")
	if err != nil {
		t.Fatal(err)
	}
	const p0, t0 = "products.0", "products.0.tariffs.0"
	cases := []struct {
		name   string
		mutate mutation
		want   []string
	}{
		{"valid", func(*testing.T, map[string]any) {}, nil},
		{"required", all(remove(p0+".code"), remove(p0+".available_from"), remove(t0+".fuel"), remove(t0+".unit_rates.0.value")),
			[]string{"required@" + p0 + ".code", "required@" + p0 + ".available_from", "required@" + t0 + ".fuel", "required@" + t0 + ".unit_rates.0.value"}},
		{"no tariffs", setTo(p0+".tariffs", []any{}), []string{"required@" + p0 + ".tariffs"}},
		{"four places at most", setTo(t0+".unit_rates.1.value", "23.10005"), []string{"max_decimal_places@" + t0 + ".unit_rates.1.value"}},
		{"eight whole digits at most", setTo(t0+".standing_charges.0.value", "123456789"), []string{"max_whole_digits@" + t0 + ".standing_charges.0.value"}},
		{"negative standing charge", setTo(t0+".standing_charges.0.value", "-1"), []string{"min_value@" + t0 + ".standing_charges.0.value"}},
		{"negative unit rate is a real price", setTo(t0+".unit_rates.2.value", "-2.5"), nil},
		{"overlapping periods of one rate type", setTo(t0+".unit_rates.1.valid_from", "2024-06-30"),
			[]string{"gaps_or_overlaps_in_rate_periods@" + t0 + ".unit_rates"}},
		{"gap between periods", setTo(t0+".unit_rates.1.valid_from", "2024-07-02"), []string{"gaps_or_overlaps_in_rate_periods@" + t0 + ".unit_rates"}},
		{"two open periods", setTo(t0+".unit_rates.0.valid_to", nil), []string{"gaps_or_overlaps_in_rate_periods@" + t0 + ".unit_rates"}},
		{"other rate types overlap freely", setTo(t0+".unit_rates.2.rate_type", "DAY"), nil},
		{"period reversed", setTo(t0+".unit_rates.0.valid_to", "2023-12-31"), []string{"start_date_later_than_end_date@" + t0 + ".unit_rates.0.valid_to"}},
		{"standing charge overlap", setTo(t0+".standing_charges", []any{
			map[string]any{"value": "1", "valid_from": "2024-01-01"}, map[string]any{"value": "2", "valid_from": "2024-02-01"}}),
			[]string{"gaps_or_overlaps_in_rate_periods@" + t0 + ".standing_charges"}},
		{"availability reversed", setTo(p0+".available_to", "2023-01-01"), []string{"start_date_later_than_end_date@" + p0 + ".available_to"}},
		{"fuel", setTo(t0+".fuel", "OIL"), []string{"invalid_choice@" + t0 + ".fuel"}},
		{"duplicate tariff code", setTo("products.0.tariffs.1.tariff_code", "E-1R-DEMO-FIX-12M-A"),
			[]string{"duplicate_tariff_code@products.0.tariffs.1.tariff_code"}},
		{"duplicate product code", func(t *testing.T, m map[string]any) {
			ps := get(t, m, "products").([]any)
			set(t, m, "products", append(ps, map[string]any{"code": "DEMO-FIX-12M", "full_name": "x", "display_name": "x",
				"available_from": "2024-01-01", "tariffs": []any{map[string]any{"tariff_code": "OTHER", "fuel": "GAS"}}}))
		}, []string{"duplicate_product_code@products.1.code"}},
		{"unknown field", setTo(t0+".colour", "green"), []string{"unknown_field@" + t0 + ".colour"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := generic(t, sample)
			tc.mutate(t, m)
			wantErrs(t, productErrors(t, encode(t, m)), tc.want...)
		})
	}
}

// The demo catalogue of `make run` is valid and covers the sample account
// (its supplier requires products there).
func TestDemoCatalogueCoversSample(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../deploy/local/demo_products.json")
	if err != nil {
		t.Fatal(err)
	}
	req, err := DecodeProducts(raw)
	if err != nil {
		t.Fatal(err)
	}
	cat := Catalogue{Tariffs: map[string]CatalogueTariff{}, Products: map[string]CatalogueProduct{}}
	for _, p := range req.Products {
		cp := CatalogueProduct{Code: p.Code, AvailableFrom: p.AvailableFrom, AvailableTo: p.AvailableTo}
		for _, tf := range p.Tariffs {
			cp.Fuels = append(cp.Fuels, tf.Fuel)
		}
		cat.Products[p.Code] = cp
		for _, tf := range p.Tariffs {
			cat.Tariffs[tf.TariffCode] = CatalogueTariff{Fuel: tf.Fuel, Product: cp}
		}
	}
	a, errs := accountErrors(t, validAccountJSON(t))
	if len(errs) > 0 {
		t.Fatal(dump(errs))
	}
	if errs := CheckCatalogue(a, cat); len(errs) > 0 {
		t.Fatalf("the demo catalogue does not cover the sample account:%s", dump(errs))
	}
}
