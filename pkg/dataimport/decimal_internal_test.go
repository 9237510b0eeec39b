package dataimport

import (
	"math/big"
	"testing"

	"github.com/shopspring/decimal"
)

// parseDecimalByBigInt is parseDecimal as it was before the digits were
// counted in the text: the reference the faster one must agree with.
func parseDecimalByBigInt(s string) (decimal.Decimal, string, string) {
	if len(s) > maxDecimalTextLen || !decimalSyntax.MatchString(s) {
		return decimal.Decimal{}, CodeInvalidDecimal, "A valid number is required."
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Decimal{}, CodeInvalidDecimal, "A valid number is required."
	}
	exp := int64(d.Exponent())
	digits := int64(len(new(big.Int).Abs(d.Coefficient()).String()))
	if d.IsZero() {
		return decimal.Zero, "", ""
	}
	if digits+exp > maxWholeDigits {
		return decimal.Decimal{}, CodeMaxWholeDigits, "Ensure that there are no more than 18 digits before the decimal point."
	}
	if exp < 0 && int64(significantPlaces(d)) > maxAnyDecimalPlaces {
		return decimal.Decimal{}, CodeMaxDecimalPlaces, "Ensure that there are no more than 20 decimal places."
	}
	return d, "", ""
}

func FuzzParseDecimalAgreesWithBigInt(f *testing.F) {
	for _, s := range []string{"0", "-0", "0.000", "1", "-1.50", "100", "1e2", "1.5E-3", "0.0012", "123456789012345678",
		"1234567890123456789", "123456789012345678.9", "0.000000000000000000001", "0.000000000000000000010",
		"1e17", "1e18", "10e16", "0e999999999", "1e-20", "1e-21", "1000e-23", "00.1", "1e2147483648", "-0.0e-5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, gotCode, _ := parseDecimal(s)
		want, wantCode, _ := parseDecimalByBigInt(s)
		if gotCode != wantCode || !got.Equal(want) || got.Exponent() != want.Exponent() {
			t.Fatalf("%q: got %s %q, want %s %q", s, got, gotCode, want, wantCode)
		}
	})
}
