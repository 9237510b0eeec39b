package dataimport

import (
	"math/big"
	"strconv"
	"testing"

	"github.com/shopspring/decimal"
)

// The int64 answers of FitsStoredMoney and wholeDigits equal the big.Int
// ones around every boundary: powers of ten, the 18-digit limit of the
// fast path, the int64 limits, large and small exponents, signs and zeros.
func TestDecimalInt64ChecksAgreeWithBigInt(t *testing.T) {
	texts := []string{"0", "-0", "0.000", "-0.0e-5", "1e999", "-1e-999", "1e-19", "9e-18", "123456789012345678901234567890e-10",
		"99999999999999.99", "99999999999999.995", "100000000000000", "-100000000000000.00", "-99999999999999.999999",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808e-5", "999999999999999999", "1000000000000000000e-4"}
	coefficients := []int64{0, 1, 9, 10, 99, 100, 12345, 99999999999999, 100000000000000, 999999999999999999,
		100000000000000000, 1000000000000000000, 9223372036854775807}
	for e := -25; e <= 25; e++ {
		for _, c := range coefficients {
			for _, sign := range []int64{1, -1} {
				texts = append(texts, new(big.Int).Mul(big.NewInt(c), big.NewInt(sign)).String()+"e"+strconv.Itoa(e))
			}
		}
	}
	for _, s := range texts {
		d, err := decimal.NewFromString(s)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := FitsStoredMoney(d), fitsStoredMoneyBig(d); got != want {
			t.Errorf("FitsStoredMoney(%s) = %v, want %v", s, got, want)
		}
		if got, want := wholeDigits(d), wholeDigitsBig(d); got != want {
			t.Errorf("wholeDigits(%s) = %d, want %d", s, got, want)
		}
		// The results of arithmetic (a running balance) as well as parsed values.
		sum := d.Add(decimal.New(1, -2))
		if got, want := FitsStoredMoney(sum), fitsStoredMoneyBig(sum); got != want {
			t.Errorf("FitsStoredMoney(%s + 0.01) = %v, want %v", s, got, want)
		}
	}
}
