package main

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/gridshift/dataimport/pkg/market/gb"
)

// realisticAccount is the load-test account: 2 customers (one with a PSR
// entry), 1 supply address, 2 meter points with agreements and a meter each
// (2 registers and 2 transfer readings on electricity, 1 and 1 on gas), 2
// notes, 5 opening transactions and 2 payment schedules, about 4 KB of
// JSON, valid for a GB supplier (market GB: the MPAN carries its check
// digit). withInstruction adds a payment instruction.
func realisticAccount(supplier, external string, i int) map[string]any {
	today := time.Now().UTC()
	from := today.AddDate(0, 0, -today.Day()+1) // first of this month
	day := func(t time.Time) string { return t.Format("2006-01-02") }
	tx := func(id, typ, amount string, extra map[string]any) map[string]any {
		m := map[string]any{"transaction_id": fmt.Sprintf("%s-%s", external, id), "transaction_date": day(from.AddDate(0, 0, 2)),
			"amount": amount, "type": typ}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	customer := func(given, email string, mobile int) map[string]any {
		return map[string]any{
			"given_name": given, "family_name": "Loadtest", "title": "Mx", "salutation": "Mx Loadtest",
			"email": email, "mobile": fmt.Sprintf("07400 %06d", mobile%1000000), "landline": "020 7946 0018",
			"date_of_birth": "1980-04-12",
			"customer_preferences": map[string]bool{"opted_into_sms": true, "opted_into_updates": true, "opted_into_offers": false,
				"opted_into_recommended": false, "opted_into_third_parties": false, "is_user_psr_consent_obtained": true},
		}
	}
	meter := func(mpxn, fuel string, registers ...string) map[string]any {
		var regs, reads []map[string]any
		for _, r := range registers {
			regs = append(regs, map[string]any{"register_id": r, "number_of_digits": 5, "rate_type": "STANDARD"})
			reads = append(reads, map[string]any{"register_id": r, "reading_date": "2023-01-01", "reading_value": i % 100000, "reading_type": "CUSTOMER"})
		}
		mp := map[string]any{"mpxn": mpxn, "fuel": fuel, "supply_start_date": "2023-01-01",
			"agreements": []map[string]any{
				{"product_code": "FIX-12M-23", "valid_from": "2023-01-01", "valid_to": "2023-12-31"},
				{"product_code": "VAR-24", "valid_from": "2024-01-01"},
			},
			"meters": []map[string]any{{"serial_number": "M" + mpxn, "registers": regs, "transfer_readings": reads}}}
		if fuel == "ELECTRICITY" {
			mp["profile_class"], mp["ssc"], mp["estimated_annual_consumption"] = 1, "0393", "3100"
		}
		return mp
	}
	first := customer("Alex", fmt.Sprintf("alex.%d@example.co.uk", i), i)
	first["psr"] = []map[string]any{{"code": "09", "effective_from": "2023-01-01"}}
	return map[string]any{
		"import_supplier": supplier, "external_account_number": external, "account_type": "DOMESTIC",
		"customers": []map[string]any{
			first,
			customer("Sam", fmt.Sprintf("sam.%d@example.co.uk", i), i+1),
		},
		"billing_name": "Alex Loadtest", "billing_address1": fmt.Sprintf("%d Meter Street", i%900+1), "billing_address2": "Westminster",
		"billing_address3": "London", "billing_postcode": "SW1A 2AA", "billing_email": fmt.Sprintf("billing.%d@example.co.uk", i),
		"communication_preference": "ONLINE", "sales_channel": "DIRECT", "date_of_sale": "2022-11-01",
		"supply_addresses": []map[string]any{{
			"supply_address1": fmt.Sprintf("%d Meter Street", i%900+1), "supply_address2": "Westminster", "supply_address3": "London",
			"supply_postcode": "SW1A 2AA", "customer_at_supply_address_from_date": "2022-11-01",
			"meter_points": []map[string]any{meter(mpanCore(fmt.Sprintf("1%011d", i%100000000000)), "ELECTRICITY", "1", "2"), meter(fmt.Sprintf("9%09d", i%1000000000), "GAS", "1")},
		}},
		"last_statement_closing_date": day(from.AddDate(0, 0, -1)),
		"transfer_balance":            "120.50",
		"metadata":                    []map[string]string{{"key": "legacy_id", "value": external}, {"key": "tariff", "value": "standard"}},
		"references":                  []map[string]string{{"namespace": "legacy", "value": external}},
		"notes": []map[string]any{
			{"body": "Migrated from the legacy billing system.", "created_at": "2024-01-02T09:00:00Z"},
			{"body": "Customer prefers e-mail contact.", "is_pinned": true, "created_at": "2024-01-03T09:00:00Z", "unpin_at": "2030-01-01T00:00:00Z"},
		},
		"payment_schedules": []map[string]any{
			{"means": "DIRECT_DEBIT", "start_date": day(from), "frequency": "MONTHLY", "amount": "85.50"},
			{"means": "CARD", "start_date": "2023-01-01", "frequency": "QUARTERLY", "amount": "240.00"},
		},
		"current_statement_transactions": []map[string]any{
			tx("C1", "CHARGE", "45.20", map[string]any{"reason": "IMPORTED_CHARGE", "display_note": "Opening charge", "note": "legacy"}),
			tx("R1", "CREDIT", "10.00", map[string]any{"reason": "GENERAL_CREDIT", "display_note": "Goodwill", "note": "legacy"}),
			tx("P1", "PAYMENT", "30.00", map[string]any{"payment_type": "DD_REGULAR_COLLECTION", "reference": "DD-1", "note": "legacy"}),
			tx("P2", "REPAYMENT", "5.00", map[string]any{"payment_type": "DIRECT_CREDIT", "reference": "RP-1", "note": "legacy"}),
			tx("S1", "CHARGE", "12.34", map[string]any{"reason": "IMPORTED_CHARGE", "display_note": "Standing charge", "note": "legacy"}),
		},
	}
}

// withInstruction gives the account a DIRECT_DEBIT payment instruction at
// vendor (stripe-mock knows any mandate_… reference). Off by default: each
// one costs the worker a vendor call before the creation transaction, and
// the bench stack configures no vendor (-payment-vendor STRIPE with
// STRIPE_API_KEY and STRIPE_API_URL set turns it on).
func withInstruction(acc map[string]any, vendor string, i int) map[string]any {
	if vendor != "" {
		acc["payment_instructions"] = []map[string]any{{"type": "DIRECT_DEBIT", "reference": fmt.Sprintf("mandate_LG%d", i), "vendor": vendor}}
	}
	return acc
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// mpanCore appends the MPAN check digit, so load-test accounts pass market
// GB too.
func mpanCore(first12 string) string { return first12 + strconv.Itoa(gb.MPANCheckDigit(first12)) }
