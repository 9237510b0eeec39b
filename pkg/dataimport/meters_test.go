package dataimport

import (
	"testing"
)

// meterSample gives the sample's first meter point one meter with two
// registers and a reading each, and the first customer a PSR entry.
func meterSample(t *testing.T, m map[string]any) {
	set(t, m, mp0+".profile_class", jsonNum("1"))
	set(t, m, mp0+".ssc", "0393")
	set(t, m, mp0+".estimated_annual_consumption", "3100.5")
	set(t, m, mp0+".meters", []any{map[string]any{
		"serial_number": "S95A012345",
		"registers": []any{
			map[string]any{"register_id": "1", "number_of_digits": jsonNum("5"), "rate_type": "DAY"},
			map[string]any{"register_id": "2", "number_of_digits": jsonNum("5"), "rate_type": "NIGHT"},
		},
		"transfer_readings": []any{
			map[string]any{"register_id": "1", "reading_date": "2024-02-01", "reading_value": jsonNum("12345"), "reading_type": "CUSTOMER"},
			map[string]any{"register_id": "2", "reading_date": "2024-02-01", "reading_value": "99999.5"},
		},
	}})
	set(t, m, mp1+".meters", []any{map[string]any{"serial_number": "G4K00123"}})
	set(t, m, "customers.0.psr", []any{map[string]any{"code": "09", "effective_from": "2024-01-01"}})
}

func TestMeterDataRules(t *testing.T) {
	t.Parallel()
	const meter = mp0 + ".meters.0"
	cases := []struct {
		name   string
		mutate mutation
		want   []string
	}{
		{"valid meters, registers, readings and PSR", meterSample, nil},
		{"duplicate serial across meter points", setTo(mp1+".meters.0.serial_number", "S95A012345"),
			[]string{"duplicate_meter_serial_number@" + mp1 + ".meters.0.serial_number"}},
		{"duplicate register id", setTo(meter+".registers.1.register_id", "1"),
			[]string{"duplicate_register_id@" + meter + ".registers.1.register_id", "reading_register_not_found@" + meter + ".transfer_readings.1.register_id"}},
		{"reading of an unknown register", setTo(meter+".transfer_readings.1.register_id", "9"),
			[]string{"reading_register_not_found@" + meter + ".transfer_readings.1.register_id"}},
		{"reading longer than the register", setTo(meter+".transfer_readings.0.reading_value", jsonNum("123456")),
			[]string{"reading_value_too_long@" + meter + ".transfer_readings.0.reading_value"}},
		{"reading at the register's length with places", setTo(meter+".transfer_readings.0.reading_value", "99999.99"), nil},
		{"negative reading", setTo(meter+".transfer_readings.0.reading_value", jsonNum("-1")),
			[]string{"min_value@" + meter + ".transfer_readings.0.reading_value"}},
		{"reading before supply start", setTo(meter+".transfer_readings.0.reading_date", "2024-01-31"),
			[]string{"reading_date_outside_supply@" + meter + ".transfer_readings.0.reading_date"}},
		{"reading after supply end", all(setTo(mp0+".supply_end_date", "2024-06-30"), setTo(meter+".transfer_readings.0.reading_date", "2024-07-01")),
			[]string{"reading_date_outside_supply@" + meter + ".transfer_readings.0.reading_date"}},
		{"reading in the future", setTo(meter+".transfer_readings.0.reading_date", "2025-06-16"),
			[]string{"date_in_future@" + meter + ".transfer_readings.0.reading_date"}},
		{"two readings of a register on one date", setTo(meter+".transfer_readings.1.register_id", "1"),
			[]string{"duplicate_reading@" + meter + ".transfer_readings.1.reading_date"}},
		{"number of digits out of range", all(setTo(meter+".registers.0.number_of_digits", jsonNum("0")), setTo(meter+".registers.1.number_of_digits", jsonNum("13"))),
			[]string{"invalid_number_of_digits@" + meter + ".registers.0.number_of_digits", "invalid_number_of_digits@" + meter + ".registers.1.number_of_digits"}},
		{"generic profile class bound", setTo(mp0+".profile_class", jsonNum("100")), []string{"invalid_profile_class@" + mp0 + ".profile_class"}},
		{"EAC places and sign", all(setTo(mp0+".estimated_annual_consumption", "1.005"), setTo(mp1+".estimated_annual_consumption", jsonNum("-1"))),
			[]string{"max_decimal_places@" + mp0 + ".estimated_annual_consumption", "min_value@" + mp1 + ".estimated_annual_consumption"}},
		{"EAC whole digits", setTo(mp0+".estimated_annual_consumption", "1e12"), []string{"max_whole_digits@" + mp0 + ".estimated_annual_consumption"}},
		{"serial required", setTo(meter+".serial_number", ""), []string{"blank@" + meter + ".serial_number"}},
		{"PSR period reversed", setTo("customers.0.psr.0.effective_to", "2023-12-31"), []string{"start_date_later_than_end_date@customers.0.psr.0.effective_to"}},
		{"PSR code blank", setTo("customers.0.psr.0.code", ""), []string{"blank@customers.0.psr.0.code"}},
		{"generic rules accept any non-blank PSR code", setTo("customers.0.psr.0.code", "WHEELCHAIR"), nil},
		{"agreement by tariff code", all(remove(mp1+".agreements.0.product_code"), setTo(mp1+".agreements.0.tariff_code", "E-1R-DEMO")), nil},
		{"agreement names neither", remove(mp1 + ".agreements.0.product_code"), []string{"required@" + mp1 + ".agreements.0.product_code"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := generic(t, validAccountJSON(t))
			meterSample(t, m)
			tc.mutate(t, m)
			_, errs := accountErrors(t, encode(t, m))
			wantErrs(t, errs, tc.want...)
		})
	}
}

func TestCheckCatalogue(t *testing.T) {
	t.Parallel()
	elec := CatalogueProduct{Code: "FIX", AvailableFrom: Date{2024, 1, 1}, AvailableTo: &Date{2024, 12, 31}, Fuels: []Fuel{FuelElectricity}}
	gas := CatalogueProduct{Code: "VARG", AvailableFrom: Date{2020, 1, 1}, Fuels: []Fuel{FuelGas}}
	cat := Catalogue{
		Tariffs:  map[string]CatalogueTariff{"E-FIX": {Fuel: FuelElectricity, Product: elec}, "G-VAR": {Fuel: FuelGas, Product: gas}},
		Products: map[string]CatalogueProduct{"FIX": elec, "VARG": gas},
	}
	ag := func(mp string, k int) string {
		return "supply_addresses.0.meter_points." + mp + ".agreements." + string(rune('0'+k))
	}
	cases := []struct {
		name   string
		mutate mutation
		want   []string
	}{
		{"every code found", all(
			remove(mp0+".agreements.0.product_code"), setTo(mp0+".agreements.0.tariff_code", "E-FIX"),
			remove(mp0+".agreements.1.product_code"), setTo(mp0+".agreements.1.tariff_code", "E-FIX"), setTo(mp0+".agreements.1.valid_from", "2024-12-31"),
			setTo(mp0+".agreements.0.valid_to", "2024-12-30"),
			setTo(mp1+".agreements.0.product_code", "VARG"), setTo(mp1+".agreements.1.product_code", "VARG")), nil},
		{"unknown codes", all(setTo(mp0+".agreements.0.tariff_code", "NOPE")),
			[]string{"tariff_code_not_found@" + ag("0", 0) + ".tariff_code", "product_not_found@" + ag("0", 1) + ".product_code",
				"product_not_found@" + ag("1", 0) + ".product_code", "product_not_found@" + ag("1", 1) + ".product_code"}},
		{"fuel mismatch and availability", all(
			setTo(mp0+".agreements.0.tariff_code", "G-VAR"), setTo(mp0+".agreements.1.product_code", "VARG"),
			setTo(mp1+".agreements.0.product_code", "FIX"), remove(mp1+".agreements.1.product_code"), setTo(mp1+".agreements.1.tariff_code", "E-FIX")),
			[]string{"tariff_fuel_mismatch@" + ag("0", 0) + ".tariff_code", "tariff_fuel_mismatch@" + ag("0", 1) + ".product_code",
				"tariff_fuel_mismatch@" + ag("1", 0) + ".product_code", "tariff_fuel_mismatch@" + ag("1", 1) + ".tariff_code",
				"product_not_available@" + ag("1", 1) + ".tariff_code"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := generic(t, validAccountJSON(t))
			tc.mutate(t, m)
			a, errs := accountErrors(t, encode(t, m))
			if len(errs) > 0 {
				t.Fatal(dump(errs))
			}
			a.CurrentStatementTransactions = nil
			wantErrs(t, CheckCatalogue(a, cat), tc.want...)
		})
	}
	supply := []Transaction{{Type: TransactionSupplyCharge, ProductCode: ptr("FIX")}, {Type: TransactionSupplyCharge, ProductCode: ptr("GONE")}, {Type: TransactionCharge}}
	wantErrs(t, CheckTransactionProducts(supply, "transactions", cat), "product_not_found@transactions.1.product_code")
}
