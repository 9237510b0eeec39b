package postgres_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gridshift/dataimport/pkg/postgres"
)

// withMeterData gives the sample account meter data on both meter points
// (meters registers readings), PSR entries and an agreement by tariff code:
// n meters on the electricity meter point, one on the gas one.
func withMeterData(n int) func(m map[string]any) {
	return func(m map[string]any) {
		sa := m["supply_addresses"].([]any)[0].(map[string]any)
		mps := sa["meter_points"].([]any)
		elec, gas := mps[0].(map[string]any), mps[1].(map[string]any)
		elec["profile_class"], elec["ssc"], elec["estimated_annual_consumption"] = 1, "0393", "3100.50"
		var meters []any
		for i := range n {
			meters = append(meters, map[string]any{
				"serial_number": fmt.Sprintf("S95A%06d", i),
				"registers": []any{
					map[string]any{"register_id": "1", "number_of_digits": 5, "rate_type": "DAY"},
					map[string]any{"register_id": "2", "number_of_digits": 5, "rate_type": "NIGHT"},
				},
				"transfer_readings": []any{
					map[string]any{"register_id": "1", "reading_date": "2024-02-01", "reading_value": "12345", "reading_type": "CUSTOMER"},
					map[string]any{"register_id": "2", "reading_date": "2024-02-01", "reading_value": "678.5"},
				},
			})
		}
		elec["meters"] = meters
		gas["meters"] = []any{map[string]any{"serial_number": "G4K00123",
			"registers":         []any{map[string]any{"register_id": "G", "number_of_digits": 5}},
			"transfer_readings": []any{map[string]any{"register_id": "G", "reading_date": "2024-02-01", "reading_value": "4521"}}}}
		ag := elec["agreements"].([]any)[0].(map[string]any)
		delete(ag, "product_code")
		ag["tariff_code"] = "E-1R-DEMO-VAR-A"
		cs := m["customers"].([]any)
		cs[0].(map[string]any)["psr"] = []any{
			map[string]any{"code": "09", "effective_from": "2024-01-01"},
			map[string]any{"code": "15", "effective_from": "2024-01-01", "effective_to": "2026-01-01"}}
		cs[1].(map[string]any)["psr"] = []any{map[string]any{"code": "22"}}
	}
}

// Meter data round-trips: after creation every meter, register, reading
// and PSR entry is a row, linked to its parent; a dry run writes none.
func TestCreateAccountStoresMeterData(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.supplier("METERS", false)

	dry := e.prepare(s, "EXT-DRY", true, withMeterData(2))
	if _, err := e.db.CreateAccount(e.ctx, dry); !errors.Is(err, postgres.ErrDryRun) {
		t.Fatalf("dry run: %v", err)
	}
	e.wantNothingWritten()

	e.create(e.prepare(s, "EXT-METERS", false, withMeterData(2)))
	want := sampleCounts(1)
	want["meters"], want["meter_registers"], want["transfer_readings"], want["customer_psr"] = 3, 5, 5, 3
	e.wantCounts(want)

	var got string
	e.scalar(&got, `SELECT string_agg(m.serial_number || ':' || mp.mpxn || ':' || r.register_id || ':' || r.number_of_digits || ':' || r.rate_type
			|| ':' || COALESCE(tr.reading_value::text, '-') || ':' || COALESCE(tr.reading_date::text, '-'), ' ' ORDER BY m.serial_number, r.register_id)
		  FROM meters m JOIN meter_points mp ON mp.id = m.meter_point_id
		  JOIN meter_registers r ON r.meter_id = m.id
		  LEFT JOIN transfer_readings tr ON tr.meter_id = m.id AND tr.register_id = r.register_id`)
	const wantRows = "G4K00123:7514321006:G:5::4521.00:2024-02-01 " +
		"S95A000000:1200023305967:1:5:DAY:12345.00:2024-02-01 S95A000000:1200023305967:2:5:NIGHT:678.50:2024-02-01 " +
		"S95A000001:1200023305967:1:5:DAY:12345.00:2024-02-01 S95A000001:1200023305967:2:5:NIGHT:678.50:2024-02-01"
	if got != wantRows {
		t.Errorf("meters:\n got  %s\n want %s", got, wantRows)
	}
	e.scalar(&got, `SELECT string_agg(c.given_name || ':' || p.code || ':' || COALESCE(p.effective_to::text, 'open'), ' ' ORDER BY c.position, p.code)
		  FROM customer_psr p JOIN account_customers c ON c.id = p.customer_id`)
	if got != "Alice:09:open Alice:15:2026-01-01 Bob:22:open" {
		t.Errorf("psr: %s", got)
	}
	e.scalar(&got, `SELECT profile_class || ':' || ssc || ':' || estimated_annual_consumption FROM meter_points WHERE mpxn = '1200023305967'`)
	if got != "1:0393:3100.50" {
		t.Errorf("meter point settlement data: %s", got)
	}
	e.scalar(&got, `SELECT string_agg(COALESCE(tariff_code, '-') || '/' || COALESCE(product_code, '-'), ' ' ORDER BY id) FROM agreements`)
	if got != "E-1R-DEMO-VAR-A/- -/DEMO-VAR-24-02 -/DEMO-FIX-12M-24-02-G -/DEMO-VAR-24-02-G" {
		t.Errorf("agreements: %s", got)
	}
}
