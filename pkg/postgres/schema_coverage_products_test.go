package postgres_test

import (
	"bytes"
	"encoding/json"
	"os"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Coverage of migration 00012 (products, meter data, PSR, supplier
// settings), kept in its own file and merged into schemaCoverage.
func init() {
	for k, v := range map[string]coverage{
		"unit_rates.value numeric(12,4)": refusedBy(
			product("max_decimal_places", "products.0.tariffs.0.unit_rates.0.value", func(m map[string]any) { unitRate(m)["value"] = "1.00001" }),
			product("max_whole_digits", "products.0.tariffs.0.unit_rates.0.value", func(m map[string]any) { unitRate(m)["value"] = "-123456789" })),
		"standing_charges.value numeric(12,4)": refusedBy(
			product("max_decimal_places", "products.0.tariffs.0.standing_charges.0.value", func(m map[string]any) { standingCharge(m)["value"] = "1.00001" }),
			product("max_whole_digits", "products.0.tariffs.0.standing_charges.0.value", func(m map[string]any) { standingCharge(m)["value"] = "123456789" })),
		"check unit_rates.unit_rates_check": refusedBy(
			product("start_date_later_than_end_date", "products.0.tariffs.0.unit_rates.0.valid_to", func(m map[string]any) { unitRate(m)["valid_to"] = "2023-12-31" })),
		"check standing_charges.standing_charges_check": refusedBy(
			product("start_date_later_than_end_date", "products.0.tariffs.0.standing_charges.0.valid_to", func(m map[string]any) {
				standingCharge(m)["valid_to"] = "2023-12-31"
			})),
		"check products.products_check": refusedBy(
			product("start_date_later_than_end_date", "products.0.available_to", func(m map[string]any) { firstProduct(m)["available_to"] = "2023-12-31" })),
		"check tariffs.tariffs_fuel_check": refusedBy(
			product("invalid_choice", "products.0.tariffs.0.fuel", func(m map[string]any) { firstTariff(m)["fuel"] = "OIL" })),

		"meter_points.estimated_annual_consumption numeric(14,2)": refusedBy(
			account("max_decimal_places", mp0+".estimated_annual_consumption", func(m map[string]any) { meterPoint(m)["estimated_annual_consumption"] = "1.001" }),
			account("max_whole_digits", mp0+".estimated_annual_consumption", func(m map[string]any) { meterPoint(m)["estimated_annual_consumption"] = "1e12" })),
		"meter_points.profile_class smallint": refusedBy(
			account("invalid_profile_class", mp0+".profile_class", func(m map[string]any) { meterPoint(m)["profile_class"] = 40000 })),
		"check meter_points.meter_points_profile_class_check": refusedBy(
			account("invalid_profile_class", mp0+".profile_class", func(m map[string]any) { meterPoint(m)["profile_class"] = -1 })),
		"meter_registers.number_of_digits integer": refusedBy(
			account("invalid_number_of_digits", mp0+".meters.0.registers.0.number_of_digits", func(m map[string]any) { register(m)["number_of_digits"] = 3000000000 })),
		"check meter_registers.meter_registers_number_of_digits_check": refusedBy(
			account("invalid_number_of_digits", mp0+".meters.0.registers.0.number_of_digits", func(m map[string]any) { register(m)["number_of_digits"] = 13 })),
		"transfer_readings.reading_value numeric(14,2)": refusedBy(
			account("max_decimal_places", mp0+".meters.0.transfer_readings.0.reading_value", func(m map[string]any) { reading(m)["reading_value"] = "1.001" }),
			account("reading_value_too_long", mp0+".meters.0.transfer_readings.0.reading_value", func(m map[string]any) {
				register(m)["number_of_digits"] = 12
				reading(m)["reading_value"] = "1e12"
			})),
		"check transfer_readings.transfer_readings_reading_value_check": refusedBy(
			account("min_value", mp0+".meters.0.transfer_readings.0.reading_value", func(m map[string]any) { reading(m)["reading_value"] = "-1" })),
		"check customer_psr.customer_psr_check": refusedBy(
			account("start_date_later_than_end_date", "customers.0.psr.0.effective_to", func(m map[string]any) {
				m["customers"].([]any)[0].(map[string]any)["psr"] = []any{map[string]any{"code": "09", "effective_from": "2024-02-01", "effective_to": "2024-01-31"}}
			})),
		"check import_suppliers.import_suppliers_market_check": notFromPartner(operators + " (importctl checks the name against pkg/market)"),

		"customer_psr.customer_id bigint":   notFromPartner(aKey),
		"customer_psr.id bigint":            notFromPartner(aKey),
		"meter_registers.id bigint":         notFromPartner(aKey),
		"meter_registers.meter_id bigint":   notFromPartner(aKey),
		"meters.account_id bigint":          notFromPartner(aKey),
		"meters.id bigint":                  notFromPartner(aKey),
		"meters.meter_point_id bigint":      notFromPartner(aKey),
		"products.id bigint":                notFromPartner(aKey),
		"standing_charges.id bigint":        notFromPartner(aKey),
		"standing_charges.tariff_id bigint": notFromPartner(aKey),
		"tariffs.id bigint":                 notFromPartner(aKey),
		"tariffs.product_id bigint":         notFromPartner(aKey),
		"transfer_readings.id bigint":       notFromPartner(aKey),
		"transfer_readings.meter_id bigint": notFromPartner(aKey),
		"unit_rates.id bigint":              notFromPartner(aKey),
		"unit_rates.tariff_id bigint":       notFromPartner(aKey),
	} {
		schemaCoverage[k] = v
	}
}

const mp0 = "supply_addresses.0.meter_points.0"

func meterPoint(m map[string]any) map[string]any {
	return m["supply_addresses"].([]any)[0].(map[string]any)["meter_points"].([]any)[0].(map[string]any)
}

// meter gives the sample's first meter point a meter with one register
// and one reading (valid), and returns the meter.
func meter(m map[string]any) map[string]any {
	mp := meterPoint(m)
	if mp["meters"] == nil {
		mp["meters"] = []any{map[string]any{
			"serial_number":     "S95A012345",
			"registers":         []any{map[string]any{"register_id": "1", "number_of_digits": 5}},
			"transfer_readings": []any{map[string]any{"register_id": "1", "reading_date": "2024-02-01", "reading_value": "12345"}},
		}}
	}
	return mp["meters"].([]any)[0].(map[string]any)
}

func register(m map[string]any) map[string]any {
	return meter(m)["registers"].([]any)[0].(map[string]any)
}

func reading(m map[string]any) map[string]any {
	return meter(m)["transfer_readings"].([]any)[0].(map[string]any)
}

func firstProduct(m map[string]any) map[string]any { return m["products"].([]any)[0].(map[string]any) }

func firstTariff(m map[string]any) map[string]any {
	return firstProduct(m)["tariffs"].([]any)[0].(map[string]any)
}

func unitRate(m map[string]any) map[string]any {
	return firstTariff(m)["unit_rates"].([]any)[0].(map[string]any)
}

func standingCharge(m map[string]any) map[string]any {
	return firstTariff(m)["standing_charges"].([]any)[0].(map[string]any)
}

// product edits the sample catalogue (validate-products, create-or-update
// and importctl products load all run DecodeProducts).
func product(code, attr string, edit func(map[string]any)) example {
	return example{code, attr, func() []dataimport.FieldError {
		raw, err := os.ReadFile("../dataimport/testdata/products_valid.json")
		if err != nil {
			return fieldErrors(err)
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return fieldErrors(err)
		}
		edit(m)
		body, err := json.Marshal(m)
		if err != nil {
			return fieldErrors(err)
		}
		_, err = dataimport.DecodeProducts(body)
		return fieldErrors(err)
	}}
}
