package dataimport

import (
	"strings"
	"testing"
)

const (
	mp0 = "supply_addresses.0.meter_points.0"
	mp1 = "supply_addresses.0.meter_points.1"
)

func TestValidAccountNormalised(t *testing.T) {
	a, errs := accountErrors(t, validAccountJSON(t))
	if len(errs) > 0 {
		t.Fatalf("sample account rejected:%s", dump(errs))
	}
	c0, c1 := a.Customers[0], a.Customers[1]
	if *c0.Mobile != "+447400123456" || *c0.Landline != "+442079460018" || *c1.Mobile != "+447123456789" {
		t.Errorf("phones not E.164: %s %s %s", *c0.Mobile, *c0.Landline, *c1.Mobile)
	}
	if c1.CustomerPreferences == nil || c1.CustomerPreferences.OptedIntoSMS {
		t.Errorf("preferences default not filled: %+v", c1.CustomerPreferences)
	}
	if a.TransferBalance.String() != "-42.50" || a.CurrentStatementTransactions[0].Amount.String() != "12.50" {
		t.Errorf("money: %s %s", a.TransferBalance, a.CurrentStatementTransactions[0].Amount)
	}
	if *a.Notes[1].IsPinned || a.Notes[1].CreatedAt.String() != "2025-06-01T07:00:00Z" {
		t.Errorf("note normalisation: %+v", a.Notes[1])
	}
	if from, to := a.FirstStatementPeriod(Date{2025, 6, 15}); from != (Date{2025, 6, 1}) || to != (Date{2025, 6, 30}) {
		t.Errorf("period %s..%s", from, to)
	}
	if a.MeterPointCount() != 4-2 || len(a.Emails()) != 2 {
		t.Errorf("accessors: %d %v", a.MeterPointCount(), a.Emails())
	}
}

func TestAccountDefaultsAndTrim(t *testing.T) {
	m := generic(t, validAccountJSON(t))
	for _, k := range []string{"account_type", "unknown_occupier", "communication_preference", "transfer_balance"} {
		del(t, m, k)
	}
	set(t, m, "external_account_number", "  EXT-0001 \n")
	set(t, m, "customers.0.given_name", "\tAlice ")
	set(t, m, "customers.0.landline", "")
	a, errs := accountErrors(t, encode(t, m))
	if len(errs) > 0 {
		t.Fatal(dump(errs))
	}
	if *a.AccountType != AccountTypeDomestic || *a.UnknownOccupier || *a.CommunicationPreference != CommunicationOnline ||
		a.TransferBalance.String() != "0.00" {
		t.Errorf("defaults: %v %v %v %v", *a.AccountType, *a.UnknownOccupier, *a.CommunicationPreference, a.TransferBalance)
	}
	if a.ExternalAccountNumber != "EXT-0001" || a.Customers[0].GivenName != "Alice" || *a.Customers[0].Landline != "" {
		t.Errorf("trim/blank phone: %q %q %q", a.ExternalAccountNumber, a.Customers[0].GivenName, *a.Customers[0].Landline)
	}
	out := string(encode(t, a))
	for _, want := range []string{`"account_type":"DOMESTIC"`, `"unknown_occupier":false`, `"communication_preference":"ONLINE"`, `"transfer_balance":"0.00"`} {
		if !strings.Contains(out, want) {
			t.Errorf("normalised output lacks %s", want)
		}
	}
}

type mutation func(t *testing.T, m map[string]any)

func setTo(path string, v any) mutation {
	return func(t *testing.T, m map[string]any) { set(t, m, path, v) }
}
func remove(path string) mutation { return func(t *testing.T, m map[string]any) { del(t, m, path) } }
func all(ms ...mutation) mutation {
	return func(t *testing.T, m map[string]any) {
		for _, f := range ms {
			f(t, m)
		}
	}
}

func TestValidateAccountRules(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	secondAddress := func(t *testing.T, m map[string]any) {
		sa := get(t, m, "supply_addresses").([]any)
		set(t, m, "supply_addresses", append(sa, map[string]any{
			"supply_address1": "1 Other St", "supply_postcode": "LS1 1AA",
			"meter_points": []any{map[string]any{"mpxn": "1200023305967", "fuel": "ELECTRICITY", "supply_start_date": "2024-01-01"}},
		}))
	}
	cases := []struct {
		name   string
		mutate mutation
		want   []string
	}{
		// required / blank / null
		{"required top-level", all(remove("import_supplier"), remove("external_account_number"), remove("sales_channel")),
			[]string{"required@import_supplier", "required@external_account_number", "required@sales_channel"}},
		{"required nested", all(remove("customers.0.given_name"), remove("supply_addresses.0.supply_postcode"),
			remove(mp0+".mpxn"), remove(mp0+".fuel"), remove(mp0+".supply_start_date"),
			remove(mp1+".agreements.0.product_code"), remove(mp1+".agreements.1.valid_from")),
			[]string{"required@customers.0.given_name", "required@supply_addresses.0.supply_postcode",
				"required@" + mp0 + ".mpxn", "required@" + mp0 + ".fuel", "required@" + mp0 + ".supply_start_date",
				"required@" + mp1 + ".agreements.0.product_code", "required@" + mp1 + ".agreements.1.valid_from"}},
		{"blank (after trim)", all(setTo("import_supplier", ""), setTo("customers.0.given_name", "   "), setTo(mp0+".mpxn", " ")),
			[]string{"blank@import_supplier", "blank@customers.0.given_name", "blank@" + mp0 + ".mpxn"}},
		{"null", all(setTo("sales_channel", nil), setTo("customers.0.given_name", nil), setTo("customers", nil)),
			[]string{"null@sales_channel", "null@customers"}},
		{"null optional is absent", all(setTo("billing_name", nil), setTo("account_type", nil), setTo("customers.0.mobile", nil)), nil},

		// lengths
		{"max lengths", all(setTo("external_account_number", long(129)), setTo("billing_postcode", long(17)),
			setTo("billing_name", long(256)), setTo("customers.0.salutation", long(256)), setTo("metadata.0.value", long(256))),
			[]string{"max_length@external_account_number", "max_length@billing_postcode", "max_length@billing_name",
				"max_length@customers.0.salutation", "max_length@metadata.0.value"}},
		{"control character in the external number", setTo("external_account_number", "EXT-\u001b1"),
			[]string{"invalid@external_account_number"}},
		{"at the limits", all(setTo("external_account_number", long(128)), setTo("billing_postcode", long(16)),
			setTo("billing_name", strings.Repeat("é", 255))), nil},

		// enums
		{"invalid choices", all(setTo("account_type", "SMALL_BUSINESS"), setTo("communication_preference", "EMAIL"),
			setTo("sales_channel", "DOOR_TO_DOOR"), setTo(mp0+".fuel", "OIL"), setTo("customers.0.title", "Lord"),
			setTo("account_type", "domestic")),
			[]string{"invalid_choice@account_type", "invalid_choice@communication_preference", "invalid_choice@sales_channel",
				"invalid_choice@" + mp0 + ".fuel", "invalid_choice@customers.0.title"}},
		{"empty title allowed", setTo("customers.0.title", ""), nil},
		{"BUSINESS needs no family name", all(setTo("account_type", "BUSINESS"), remove("customers.1.family_name")), nil},
		{"DOMESTIC needs family name", all(remove("customers.1.family_name"), setTo("customers.0.family_name", " ")),
			[]string{"customer_family_name_required@customers.1.family_name", "customer_family_name_required@customers.0.family_name"}},

		// e-mail
		{"invalid emails", all(setTo("customers.0.email", "Alice <alice@example.com>"), setTo("customers.1.email", "bob@"),
			setTo("billing_email", "billing example.com")),
			[]string{"invalid_email@customers.0.email", "invalid_email@customers.1.email", "invalid_email@billing_email"}},
		{"more invalid emails", all(setTo("customers.0.email", "a@b@c.com"), setTo("customers.1.email", "bob@exa_mple.com"),
			setTo("billing_email", "(comment)x@example.com")),
			[]string{"invalid_email@customers.0.email", "invalid_email@customers.1.email", "invalid_email@billing_email"}},
		{"dot-less domain and blank email ok", all(setTo("customers.0.email", "alice@localhost"), setTo("customers.1.email", "")), nil},

		// phones (region GB)
		{"invalid phones", all(setTo("customers.0.landline", "12345"), setTo("customers.0.mobile", "(202) 555-0143"),
			setTo("customers.1.mobile", "not a number")),
			[]string{"invalid_phone_number@customers.0.landline", "invalid_phone_number@customers.0.mobile",
				"invalid_phone_number@customers.1.mobile"}},
		{"international number ok", setTo("customers.0.mobile", "+1 202 555 0143"), nil},

		// money
		{"money places", all(setTo("transfer_balance", "1.005"), setTo("current_statement_transactions.0.amount", jsonNum("12.501"))),
			[]string{"max_decimal_places@transfer_balance", "max_decimal_places@current_statement_transactions.0.amount"}},
		{"money trailing zeros ok", setTo("transfer_balance", "1.100"), nil},
		{"money bad", setTo("transfer_balance", "ten"), []string{"invalid_decimal@transfer_balance"}},
		// numeric(16,2): 14 whole digits, for the value and for the balance it opens
		{"transfer balance beyond storage", setTo("transfer_balance", jsonNum("1e15")), []string{"max_whole_digits@transfer_balance"}},
		{"transfer balance at the bound", all(setTo("transfer_balance", "-99999999999999.99"), remove("current_statement_transactions")), nil},
		{"opening balance overflows", setTo("transfer_balance", "99999999999990.00"), // +12.50
			[]string{"balance_out_of_range@current_statement_transactions.0.amount"}},
		{"opening balance overflows below", setTo("transfer_balance", "-99999999999999.00"), // +12.50, then -55.00
			[]string{"balance_out_of_range@current_statement_transactions.1.amount"}},
		{"opening balance not summed over refused amounts", all(setTo("transfer_balance", "99999999999990.00"),
			setTo("current_statement_transactions.0.amount", jsonNum("1e14"))),
			[]string{"max_whole_digits@current_statement_transactions.0.amount"}},

		// dates
		{"future dates", all(setTo("date_of_sale", "2025-06-16"), setTo("customers.0.date_of_birth", "2025-06-15"),
			setTo("customers.1.date_of_birth", "2030-01-01")),
			[]string{"date_in_future@date_of_sale", "date_in_future@customers.0.date_of_birth", "date_in_future@customers.1.date_of_birth"}},
		{"sale today ok", setTo("date_of_sale", "2025-06-15"), nil},
		{"statement period empty", setTo("next_bill_due_date", "2025-05-31"), []string{"start_date_later_than_end_date@next_bill_due_date"}},
		// Without a closing date the first statement starts on the creation day (today).
		{"statement ends before the creation day", all(remove("last_statement_closing_date"), setTo("next_bill_due_date", "2025-06-14")),
			[]string{"start_date_later_than_end_date@next_bill_due_date"}},
		{"statement of one day, the creation day", all(remove("last_statement_closing_date"), setTo("next_bill_due_date", "2025-06-15")), nil},

		// billing address
		{"billing line without first line", remove("billing_address1"), []string{"invalid_address@billing_address1"}},
		{"billing line without postcode", remove("billing_postcode"), []string{"invalid_address@billing_postcode"}},
		{"only address3", all(remove("billing_address1"), remove("billing_address2"), remove("billing_postcode")),
			[]string{"invalid_address@billing_address1", "invalid_address@billing_postcode"}},
		{"no billing address at all", all(remove("billing_address1"), remove("billing_address2"), remove("billing_address3"), remove("billing_postcode")), nil},

		// occupier rules
		{"unknown occupier with customers", setTo("unknown_occupier", true), []string{"customer_with_unknown_occupier@customers"}},
		{"unknown occupier with two addresses", all(setTo("unknown_occupier", true), setTo("customers", []any{}), secondAddress),
			[]string{"occupier_account_with_multiple_supply_addresses@supply_addresses", "duplicate_mpxn@supply_addresses.1.meter_points.0.mpxn"}},
		{"unknown occupier ok", all(setTo("unknown_occupier", true), remove("customers")), nil},
		{"unknown occupier without address ok", all(setTo("unknown_occupier", true), remove("customers"), remove("supply_addresses")), nil},
		{"at least one customer and address", all(setTo("customers", []any{}), remove("supply_addresses")),
			[]string{"required@customers", "required@supply_addresses"}},
		{"named the occupier", all(setTo("customers.0.given_name", " the  OCCUPIER "), remove("customers.0.family_name"),
			setTo("customers.1.given_name", "The"), setTo("customers.1.family_name", "occupier")),
			[]string{"customer_may_not_be_named_the_occupier@customers.0", "customer_family_name_required@customers.0.family_name",
				"customer_may_not_be_named_the_occupier@customers.1"}},

		// metadata, references
		{"duplicate metadata keys", setTo("metadata.1.key", "legacy_tariff"), []string{"metadata_has_duplicate_keys@metadata.1.key"}},
		{"duplicate references", setTo("references.1", map[string]any{"namespace": "legacy_crm", "value": "CRM-556677"}),
			[]string{"duplicate_references@references.1"}},
		{"same namespace other value ok", setTo("references.1.namespace", "legacy_crm"), nil},

		// meter points
		{"no meter points", setTo("supply_addresses.0.meter_points", []any{}), []string{"required@supply_addresses.0.meter_points"}},
		{"duplicate mpxn", setTo(mp1+".mpxn", "1200023305967"), []string{"duplicate_mpxn@" + mp1 + ".mpxn"}},
		{"duplicate mpxn across addresses", secondAddress, []string{"duplicate_mpxn@supply_addresses.1.meter_points.0.mpxn"}},
		{"supply end before start", setTo(mp0+".supply_end_date", "2024-01-31"), []string{"start_date_later_than_end_date@" + mp0 + ".supply_end_date"}},
		{"supply end on start ok", setTo(mp0+".supply_end_date", "2024-02-01"), nil},

		// agreements (valid_to inclusive)
		{"agreement gap", setTo(mp0+".agreements.1.valid_from", "2025-02-02"), []string{"gaps_or_overlaps_in_agreement_dates@" + mp0 + ".agreements"}},
		{"agreement overlap", setTo(mp1+".agreements.1.valid_from", "2025-01-31"), []string{"gaps_or_overlaps_in_agreement_dates@" + mp1 + ".agreements"}},
		{"open-ended not last", remove(mp1 + ".agreements.0.valid_to"), []string{"gaps_or_overlaps_in_agreement_dates@" + mp1 + ".agreements"}},
		{"agreement ends before it starts", setTo(mp1+".agreements.1.valid_to", "2025-01-01"),
			[]string{"start_date_later_than_end_date@" + mp1 + ".agreements.1.valid_to"}},
		{"agreements in any order", func(t *testing.T, m map[string]any) {
			ags := get(t, m, mp1+".agreements").([]any)
			set(t, m, mp1+".agreements", []any{ags[1], ags[0]})
		}, nil},
		{"one-day agreement", all(setTo(mp1+".agreements.0.valid_to", "2024-02-01"), setTo(mp1+".agreements.1.valid_from", "2024-02-02")), nil},

		// nested notes and transactions
		{"nested note rules", all(remove("notes.0.body"), setTo("notes.1.unpin_at", "2025-05-31T23:59:59Z"),
			setTo("notes.1.document_paths.0.document_path", "../secret.pdf")),
			[]string{"note_body_or_document_path_not_found@notes.0", "note_unpin_at_earlier_than_creation_date@notes.1.unpin_at",
				"invalid_document_path@notes.1.document_paths.0.document_path"}},
		{"nested transaction rules", all(setTo("current_statement_transactions.1.transaction_id", "TX-EXT-0001-001"),
			remove("current_statement_transactions.0.reason")),
			[]string{"duplicate_transaction_ids@current_statement_transactions.1.transaction_id", "required@current_statement_transactions.0.reason"}},

		// no double reporting
		{"type error not also a rule error", setTo("current_statement_transactions.2.line_items.0.net_amount", "sixty"),
			[]string{"invalid_decimal@current_statement_transactions.2.line_items.0.net_amount"}},
		{"bad valid_from not also a gap", setTo(mp0+".agreements.1.valid_from", "soon"),
			[]string{"invalid_date@" + mp0 + ".agreements.1.valid_from"}},
		{"customer not an object", setTo("customers.0", "Alice"), []string{"invalid@customers.0"}},
		{"unknown field keeps rule errors", all(setTo(mp0+".colour", "red"), setTo(mp0+".agreements.1.valid_from", "2025-02-03")),
			[]string{"unknown_field@" + mp0 + ".colour", "gaps_or_overlaps_in_agreement_dates@" + mp0 + ".agreements"}},

		// everything at once
		{"many errors together", all(remove("import_supplier"), setTo("customers.0.landline", "999"), setTo("customers.1.nickname", "B"),
			setTo("transfer_balance", 0.001), setTo(mp1+".fuel", "COAL"), setTo("metadata.1.key", "legacy_tariff"),
			setTo("supply_addresses.0.supply_postcode", long(20)), setTo("notes.0", map[string]any{})),
			[]string{"required@import_supplier", "invalid_phone_number@customers.0.landline", "unknown_field@customers.1.nickname",
				"max_decimal_places@transfer_balance", "invalid_choice@" + mp1 + ".fuel", "metadata_has_duplicate_keys@metadata.1.key",
				"max_length@supply_addresses.0.supply_postcode", "note_body_or_document_path_not_found@notes.0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := generic(t, validAccountJSON(t))
			tc.mutate(t, m)
			_, errs := accountErrors(t, encode(t, m))
			wantErrs(t, errs, tc.want...)
		})
	}
}

func TestPhoneRegions(t *testing.T) {
	for _, tc := range []struct {
		region, in, want string // want "" = invalid
	}{
		{"GB", "07400 123456", "+447400123456"},
		{"US", "07400 123456", ""},
		{"US", "(202) 555-0143", "+12025550143"},
		{"GB", "(202) 555-0143", ""},
		{"GB", "020 7946 0018", "+442079460018"},
		{"US", "020 7946 0018", ""},
		{"US", "+44 20 7946 0018", "+442079460018"},
		{"", "07400 123456", ""}, // no region: national form cannot be read
		{"", "+447400123456", "+447400123456"},
		{"GB", "+447400123456", "+447400123456"}, // idempotent
	} {
		c := &collector{}
		s := tc.in
		c.phone(field("mobile"), &s, tc.region)
		if got := len(c.errs) == 0; got != (tc.want != "") || (got && s != tc.want) {
			t.Errorf("%s %q: got %q errs=%v, want %q", tc.region, tc.in, s, c.errs, tc.want)
		}
	}
}

func TestValidateAccountDirect(t *testing.T) {
	// Validators work on hand-built structs too (the worker may rebuild one).
	a := &Account{ImportSupplier: "S", ExternalAccountNumber: "E", SalesChannel: SalesChannelDirect}
	wantErrs(t, ValidateAccount(a, testRules), "required@customers", "required@supply_addresses")
	wantErrs(t, ValidateAccount(&Account{}, testRules), "blank@import_supplier", "blank@external_account_number",
		"blank@sales_channel", "required@customers", "required@supply_addresses")
}
