package dataimport

import (
	"maps"
	"strings"
	"testing"
)

func TestDecodePaymentInstruction(t *testing.T) {
	vendors := []string{"GOCARDLESS", "STRIPE"}
	valid := `{"import_supplier": "DEMO", "external_account_number": "EXT-1", "vendor": "STRIPE", "reference": "pm_123", "type": "CARD"}`
	for _, tc := range []struct {
		name string
		body string
		want map[string]string // attr → code; nil: valid
	}{
		{name: "valid card", body: valid},
		{name: "valid direct debit, trimmed", body: `{"import_supplier": " DEMO ", "external_account_number": "EXT-1", "vendor": "GOCARDLESS", "reference": " MD123 ", "type": "DIRECT_DEBIT"}`},
		{name: "empty object", body: `{}`, want: map[string]string{"import_supplier": CodeRequired, "external_account_number": CodeRequired,
			"vendor": CodeRequired, "reference": CodeRequired, "type": CodeRequired}},
		{name: "blanks", body: `{"import_supplier": "", "external_account_number": " ", "vendor": "", "reference": "", "type": ""}`,
			want: map[string]string{"import_supplier": CodeBlank, "external_account_number": CodeBlank, "vendor": CodeBlank, "reference": CodeBlank, "type": CodeBlank}},
		{name: "unknown vendor", body: strings.Replace(valid, `"STRIPE"`, `"PAYPAL"`, 1), want: map[string]string{"vendor": CodeInvalidChoice}},
		{name: "vendor spelled differently", body: strings.Replace(valid, `"STRIPE"`, `"stripe"`, 1), want: map[string]string{"vendor": CodeInvalidChoice}},
		{name: "unknown type", body: strings.Replace(valid, `"CARD"`, `"CHEQUE"`, 1), want: map[string]string{"type": CodeInvalidChoice}},
		{name: "reference with a space", body: strings.Replace(valid, `"pm_123"`, `"pm 123"`, 1), want: map[string]string{"reference": CodeInvalid}},
		{name: "reference with a slash is fine", body: strings.Replace(valid, `"pm_123"`, `"acct/pm_123"`, 1)},
		{name: "reference too long", body: strings.Replace(valid, `"pm_123"`, `"`+strings.Repeat("x", 256)+`"`, 1), want: map[string]string{"reference": CodeMaxLength}},
		{name: "external too long", body: strings.Replace(valid, `"EXT-1"`, `"`+strings.Repeat("x", 129)+`"`, 1), want: map[string]string{"external_account_number": CodeMaxLength}},
		{name: "wrong JSON types and unknown field", body: `{"import_supplier": 1, "external_account_number": "E", "vendor": "STRIPE", "reference": null, "type": "CARD", "amount": 3}`,
			want: map[string]string{"import_supplier": CodeInvalid, "reference": CodeNull, "amount": CodeUnknownField}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := Decode([]byte(tc.body), CodeInvalidPayload, "invalid", PaymentInstructionValidator(vendors))
			if tc.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if req.Reference != strings.TrimSpace(req.Reference) || req.ImportSupplier != strings.TrimSpace(req.ImportSupplier) {
					t.Fatalf("not trimmed: %+v", req)
				}
				return
			}
			e, ok := AsError(err)
			if !ok || e.Code != CodeInvalidPayload {
				t.Fatalf("want invalid_payload, got %v", err)
			}
			got := map[string]string{}
			for _, fe := range e.Errors {
				if fe.Detail == "" {
					t.Errorf("no detail: %+v", fe)
				}
				got[fe.Attr] = fe.Code
			}
			if !maps.Equal(got, tc.want) {
				t.Fatalf("errors %v, want %v", got, tc.want)
			}
		})
	}
}

func TestValidatePaymentInstructionNoVendors(t *testing.T) {
	r := &PaymentInstructionRequest{ImportSupplier: "S", ExternalAccountNumber: "E", Vendor: "STRIPE", Reference: "pm_1", Type: PaymentCard}
	errs := ValidatePaymentInstruction(r, nil)
	if len(errs) != 1 || errs[0].Attr != "vendor" || errs[0].Code != CodeInvalidChoice {
		t.Fatalf("with no vendor configured every vendor is an invalid choice: %+v", errs)
	}
}

func TestPaymentInstructionSameAs(t *testing.T) {
	a := PaymentInstruction{Vendor: "STRIPE", Reference: "pm_1", Type: PaymentCard, ID: 1, Details: PaymentDetails{CardLast4: "4242"}}
	for _, tc := range []struct {
		b    PaymentInstruction
		same bool
	}{
		{PaymentInstruction{Vendor: "STRIPE", Reference: "pm_1", Type: PaymentCard}, true},
		{PaymentInstruction{Vendor: "STRIPE", Reference: "pm_2", Type: PaymentCard}, false},
		{PaymentInstruction{Vendor: "OTHER", Reference: "pm_1", Type: PaymentCard}, false},
		{PaymentInstruction{Vendor: "STRIPE", Reference: "pm_1", Type: PaymentDirectDebit}, false},
	} {
		if got := a.SameAs(tc.b); got != tc.same {
			t.Errorf("SameAs(%+v) = %v", tc.b, got)
		}
	}
	if e := ErrAccountHasActiveInstruction(a); e.Code != CodeAccountHasActiveInstruction || !strings.Contains(e.Detail, "pm_1") {
		t.Fatalf("conflict error: %+v", e)
	}
}
