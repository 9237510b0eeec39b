package postgres_test

// Coverage of migration 00014 (payment schedules) and of the payment
// instructions an account brings (migration 00004's CHECKs, which the
// post-import endpoint's examples already cover, are reached from the
// account object too), kept in its own file and merged into schemaCoverage.
func init() {
	for k, v := range map[string]coverage{
		"account_payment_schedules.amount numeric(16,2)": refusedBy(
			account("max_decimal_places", "payment_schedules.0.amount", func(m map[string]any) { schedule(m)["amount"] = "1.001" }),
			account("max_whole_digits", "payment_schedules.0.amount", func(m map[string]any) { schedule(m)["amount"] = "100000000000000" })),
		"check account_payment_schedules.account_payment_schedules_amount_check": refusedBy(
			account("amount_must_be_positive", "payment_schedules.0.amount", func(m map[string]any) { schedule(m)["amount"] = "0" })),
		"check account_payment_schedules.account_payment_schedules_means_check": refusedBy(
			account("invalid_choice", "payment_schedules.0.means", func(m map[string]any) { schedule(m)["means"] = "BITCOIN" })),
		"check account_payment_schedules.account_payment_schedules_frequency_check": refusedBy(
			account("invalid_choice", "payment_schedules.0.frequency", func(m map[string]any) { schedule(m)["frequency"] = "DAILY" })),
		"check account_payment_schedules.account_payment_schedules_position_check": notFromPartner("the schedule's index in the payload"),
		"account_payment_schedules.position integer":                               notFromPartner("the schedule's index in the payload, at most 9"),
		"account_payment_schedules.account_id bigint":                              notFromPartner(aKey),
		"account_payment_schedules.id bigint":                                      notFromPartner(aKey),
	} {
		schemaCoverage[k] = v
	}
	for k, ex := range map[string]example{
		"check payment_instructions.payment_instructions_vendor_check": account("blank", "payment_instructions.0.vendor",
			func(m map[string]any) { instruction(m)["vendor"] = " " }),
		"check payment_instructions.payment_instructions_reference_check": account("blank", "payment_instructions.0.reference",
			func(m map[string]any) { instruction(m)["reference"] = " " }),
		"check payment_instructions.payment_instructions_type_check": account("invalid_choice", "payment_instructions.0.type",
			func(m map[string]any) { instruction(m)["type"] = "CHEQUE" }),
	} {
		c := schemaCoverage[k]
		c.examples = append(c.examples, ex)
		schemaCoverage[k] = c
	}
}

// schedule gives the sample account one valid payment schedule and
// returns it for editing.
func schedule(m map[string]any) map[string]any {
	s := map[string]any{"means": "DIRECT_DEBIT", "start_date": "2025-07-01", "frequency": "MONTHLY", "amount": "85.50"}
	m["payment_schedules"] = []any{s}
	return s
}

// instruction gives the sample account one valid payment instruction and
// returns it for editing.
func instruction(m map[string]any) map[string]any {
	p := map[string]any{"type": "CARD", "reference": "pm_1NvCard", "vendor": "STRIPE"}
	m["payment_instructions"] = []any{p}
	return p
}
