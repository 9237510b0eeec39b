package dataimport

import (
	"strings"
	"testing"
	"time"
)

// TestIdentifierRuleEveryRequest: every request that names an account by
// external_account_number applies the one identifier rule, so no endpoint
// accepts a number the others (and the account's URLs) cannot address.
func TestIdentifierRuleEveryRequest(t *testing.T) {
	validators := map[string]func(ext string) []FieldError{
		"account": func(ext string) []FieldError {
			return ValidateAccount(&Account{ExternalAccountNumber: ext}, AccountRules{SkipPaymentVendors: true})
		},
		"notes":        func(ext string) []FieldError { return (&NotesRequest{ExternalAccountNumber: ext}).Validate(time.Now()) },
		"transactions": func(ext string) []FieldError { return (&TransactionsRequest{ExternalAccountNumber: ext}).Validate() },
		"statements": func(ext string) []FieldError {
			return (&StatementsRequest{ExternalAccountNumber: ext}).Validate(Date{})
		},
		"payment instruction": func(ext string) []FieldError {
			return ValidatePaymentInstruction(&PaymentInstructionRequest{ExternalAccountNumber: ext}, nil)
		},
	}
	cases := []struct {
		ext  string
		want string // "" accepted, else the code at external_account_number
	}{
		{"ACC/7", ""}, {"50%", ""}, {"a?b#c", ""}, {"Zürich 7", ""}, {"..x", ""}, {"X/cancel", ""},
		{".", CodeInvalid}, {"..", CodeInvalid}, {"a\x00b", CodeInvalid}, {"a\tb", CodeInvalid}, {"a\u0085b", CodeInvalid},
		{"caf\xe9", CodeInvalid}, {strings.Repeat("x", 129), CodeMaxLength}, {"", CodeBlank},
	}
	for name, validate := range validators {
		for _, tc := range cases {
			got := ""
			for _, e := range validate(tc.ext) {
				if e.Attr == "external_account_number" {
					got = e.Code
				}
			}
			if got != tc.want {
				t.Errorf("%s %q: code %q at external_account_number, want %q", name, tc.ext, got, tc.want)
			}
		}
	}
}
