package dataimport

import (
	"strings"
	"testing"
)

// paymentSample gives the sample account two payment schedules and a
// payment instruction.
func paymentSample(t *testing.T, m map[string]any) {
	set(t, m, "payment_schedules", []any{
		map[string]any{"means": "DIRECT_DEBIT", "start_date": "2025-07-01", "frequency": "MONTHLY", "amount": "85.50"},
		map[string]any{"means": "CASH_CHEQUE", "start_date": "2024-01-15", "frequency": "QUARTERLY", "amount": jsonNum("120")},
	})
	set(t, m, "payment_instructions", []any{
		map[string]any{"type": "DIRECT_DEBIT", "reference": "mandate_1NvDebit", "vendor": "STRIPE"},
	})
}

var paymentRules = AccountRules{PhoneRegion: "GB", Today: Date{2025, 6, 15}, PaymentVendors: []string{"GOCARDLESS", "STRIPE"}}

func TestPaymentScheduleAndInstructionRules(t *testing.T) {
	t.Parallel()
	const ps, pi = "payment_schedules.0", "payment_instructions.0"
	cases := []struct {
		name   string
		rules  *AccountRules // nil: paymentRules
		mutate mutation
		want   []string
	}{
		{"valid schedules and instruction", nil, func(*testing.T, map[string]any) {}, nil},
		{"every means and frequency", nil, func(t *testing.T, m map[string]any) {
			var list []any
			for i, means := range PaymentMeansValues {
				list = append(list, map[string]any{"means": string(means), "start_date": "2025-01-01",
					"frequency": string(PaymentFrequencies[i]), "amount": "1"})
			}
			set(t, m, "payment_schedules", list)
		}, nil},
		{"none at all", nil, all(remove("payment_schedules"), remove("payment_instructions")), nil},
		{"unknown means", nil, setTo(ps+".means", "BITCOIN"), []string{"invalid_choice@" + ps + ".means"}},
		{"means spelled differently", nil, setTo(ps+".means", "direct_debit"), []string{"invalid_choice@" + ps + ".means"}},
		{"blank means", nil, setTo(ps+".means", ""), []string{"blank@" + ps + ".means"}},
		{"unknown frequency", nil, setTo(ps+".frequency", "DAILY"), []string{"invalid_choice@" + ps + ".frequency"}},
		{"zero amount", nil, setTo(ps+".amount", "0.00"), []string{"amount_must_be_positive@" + ps + ".amount"}},
		{"negative amount", nil, setTo("payment_schedules.1.amount", jsonNum("-5")), []string{"amount_must_be_positive@payment_schedules.1.amount"}},
		{"three places", nil, setTo(ps+".amount", "1.005"), []string{"max_decimal_places@" + ps + ".amount"}},
		{"too many whole digits", nil, setTo(ps+".amount", "100000000000000"), []string{"max_whole_digits@" + ps + ".amount"}},
		{"amount as a float-looking string with trailing zeros", nil, setTo(ps+".amount", "10.500"), nil},
		{"start date not a date", nil, setTo(ps+".start_date", "2025-02-30"), []string{"invalid_date@" + ps + ".start_date"}},
		{"missing fields", nil, setTo(ps, map[string]any{}), []string{"required@" + ps + ".means", "required@" + ps + ".start_date",
			"required@" + ps + ".frequency", "required@" + ps + ".amount"}},
		{"unknown schedule field", nil, setTo(ps+".day_of_month", jsonNum("3")), []string{"unknown_field@" + ps + ".day_of_month"}},
		{"too many schedules", nil, func(t *testing.T, m map[string]any) {
			var list []any
			for range MaxPaymentSchedules + 1 {
				list = append(list, map[string]any{"means": "CARD", "start_date": "2025-01-01", "frequency": "MONTHLY", "amount": "1"})
			}
			set(t, m, "payment_schedules", list)
		}, []string{"max_items@payment_schedules"}},
		{"unknown vendor", nil, setTo(pi+".vendor", "PAYPAL"), []string{"invalid_choice@" + pi + ".vendor"}},
		{"vendor spelled differently", nil, setTo(pi+".vendor", "stripe"), []string{"invalid_choice@" + pi + ".vendor"}},
		{"no vendor configured", &AccountRules{PhoneRegion: "GB", Today: Date{2025, 6, 15}}, func(*testing.T, map[string]any) {},
			[]string{"invalid_choice@" + pi + ".vendor"}},
		{"vendor unchecked offline", &AccountRules{PhoneRegion: "GB", Today: Date{2025, 6, 15}, SkipPaymentVendors: true},
			setTo(pi+".vendor", "ANY_VENDOR"), nil},
		{"blank vendor even offline", &AccountRules{PhoneRegion: "GB", Today: Date{2025, 6, 15}, SkipPaymentVendors: true},
			setTo(pi+".vendor", " "), []string{"blank@" + pi + ".vendor"}},
		{"unknown type", nil, setTo(pi+".type", "CHEQUE"), []string{"invalid_choice@" + pi + ".type"}},
		{"reference with a space", nil, setTo(pi+".reference", "pm 1"), []string{"invalid@" + pi + ".reference"}},
		{"reference blank", nil, setTo(pi+".reference", ""), []string{"blank@" + pi + ".reference"}},
		{"reference too long", nil, setTo(pi+".reference", strings.Repeat("x", 256)), []string{"max_length@" + pi + ".reference"}},
		{"two instructions", nil, func(t *testing.T, m map[string]any) {
			one := map[string]any{"type": "CARD", "reference": "pm_1NvCard", "vendor": "STRIPE"}
			set(t, m, "payment_instructions", []any{one, one})
		}, []string{"max_items@payment_instructions"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := generic(t, validAccountJSON(t))
			paymentSample(t, m)
			tc.mutate(t, m)
			rules := paymentRules
			if tc.rules != nil {
				rules = *tc.rules
			}
			_, err := DecodeAccount(encode(t, m), rules)
			var errs []FieldError
			if err != nil {
				e, ok := AsError(err)
				if !ok || e.Code != CodeAccountFailedValidation {
					t.Fatalf("unexpected error %v", err)
				}
				errs = e.Errors
			}
			wantErrs(t, errs, tc.want...)
		})
	}
}

func TestPaymentScheduleNormalised(t *testing.T) {
	t.Parallel()
	m := generic(t, validAccountJSON(t))
	paymentSample(t, m)
	a, err := DecodeAccount(encode(t, m), paymentRules)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.PaymentSchedules) != 2 || len(a.PaymentInstructions) != 1 {
		t.Fatalf("decoded %+v %+v", a.PaymentSchedules, a.PaymentInstructions)
	}
	s := a.PaymentSchedules[1]
	if s.Means != MeansCashCheque || s.Frequency != FrequencyQuarterly || s.StartDate != (Date{2024, 1, 15}) || s.Amount.String() != "120.00" {
		t.Fatalf("schedule %+v", s)
	}
	// Staged payloads are validated again by the worker: the normalised
	// account must pass its own rules.
	out := string(encode(t, a))
	for _, want := range []string{`"payment_schedules":[`, `"amount":"85.50"`, `"means":"CASH_CHEQUE"`, `"payment_instructions":[{"type":"DIRECT_DEBIT","reference":"mandate_1NvDebit","vendor":"STRIPE"}]`} {
		if !strings.Contains(out, want) {
			t.Errorf("normalised account lacks %s: %s", want, out)
		}
	}
	if _, err := DecodeAccount([]byte(out), paymentRules); err != nil {
		t.Fatalf("normalised account fails again: %v", err)
	}
	if got := a.PaymentInstructions[0].Instruction(); got.Status != PaymentInstructionActive || !got.SameAs(PaymentInstruction{Vendor: "STRIPE", Reference: "mandate_1NvDebit", Type: PaymentDirectDebit}) {
		t.Fatalf("instruction %+v", got)
	}
}
