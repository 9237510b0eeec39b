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

func TestSignificantPlacesAgreesWithBigInt(t *testing.T) {
	texts := []string{"0", "-0", "0.000", "1.10", "1.100", "-1.005", "12.50", "0.2451", "100", "1e2", "1.5E-3", "1000e-23",
		"922337203685477580.7", "9223372036854775807e-5", "9223372036854775808e-5", "-9223372036854775808e-3",
		"-9223372036854775809e-3", "123456789012345678901234567890e-10", "100000000000000000000000000000e-20",
		"0.000000000000000000001", "-0.0e-5", "99999999999999999.99", "999999999999999999.990"}
	for e := -25; e <= 0; e++ {
		for _, c := range []int64{1, 10, 120, 1005, -4300, 999999999999999999, -100000000000000000, 9223372036854775807} {
			texts = append(texts, decimal.New(c, int32(e)).String(), big.NewInt(c).String()+"e"+big.NewInt(int64(e)).String())
		}
	}
	for _, s := range texts {
		d, err := decimal.NewFromString(s)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := significantPlaces(d), significantPlacesBig(d); got != want {
			t.Errorf("significantPlaces(%s) = %d, want %d", s, got, want)
		}
	}
}

// Every string of up to 6 characters over the grammar's alphabet (and a
// few strangers) gets the same answer by hand as from the expression.
func TestDecimalSyntaxByHand(t *testing.T) {
	alphabet := []byte("-+0159.eE x\u00e9")
	var walk func(s []byte)
	walk = func(s []byte) {
		if got, want := isDecimalSyntax(string(s)), decimalSyntax.MatchString(string(s)); got != want {
			t.Fatalf("%q: by hand %v, expression %v", s, got, want)
		}
		if len(s) == 6 {
			return
		}
		for _, c := range alphabet {
			walk(append(s, c))
		}
	}
	walk(nil)
	for _, s := range []string{"123456789012345678", "-0.000e-00", "1e+5\n", "\n1", "01", "-", "1.", ".1", "1e", "1e+", "1.5E-3"} {
		if got, want := isDecimalSyntax(s), decimalSyntax.MatchString(s); got != want {
			t.Errorf("%q: by hand %v, expression %v", s, got, want)
		}
	}
}
