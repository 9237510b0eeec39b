package dataimport

import (
	"fmt"
	"math/big"
	"regexp"

	"github.com/shopspring/decimal"
)

// Limits on decimal input. They exist so that a hostile "1e999999999" can
// never make us build a billion-digit big.Int later (String, Cmp and Add all
// rescale), and so that every accepted value fits the database's NUMERIC
// columns. They are far above any real amount or tariff.
const (
	maxDecimalTextLen   = 64 // characters of the literal
	maxWholeDigits      = 18 // digits before the point
	maxAnyDecimalPlaces = 20 // places for non-money values (prices per unit, rates)
	moneyDecimalPlaces  = 2  // CONTRACT §5: money has at most 2 places
)

// decimalSyntax is the JSON number grammar; numeric strings must follow it
// too, so "0x10", "1_000", ".5", "NaN" and "Infinity" are all refused.
// isDecimalSyntax is the same test by hand (every decimal of every request
// passes here); the expression stays as its specification, and
// TestDecimalSyntaxByHand holds the two to the same answers.
var decimalSyntax = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)

func isDecimalSyntax(s string) bool {
	i := 0
	digits := func() bool { // one or more
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > start
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		digits()
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	return i == len(s)
}

// parseDecimal turns a JSON number literal or numeric string into an exact
// decimal. It never goes through float64. On failure it returns the field
// error code and detail to report.
func parseDecimal(s string) (decimal.Decimal, string, string) {
	if len(s) > maxDecimalTextLen || !isDecimalSyntax(s) {
		return decimal.Decimal{}, CodeInvalidDecimal, "A valid number is required."
	}
	d, err := decimal.NewFromString(s)
	if err != nil { // exponent out of int32 range
		return decimal.Decimal{}, CodeInvalidDecimal, "A valid number is required."
	}
	// Check magnitude from coefficient and exponent alone, before anything
	// rescales the value. The digits are counted in the text: every
	// request's decimals pass here, and big.Int arithmetic would allocate
	// several times per value.
	if d.IsZero() {
		return decimal.Zero, "", ""
	}
	exp := int64(d.Exponent())
	digits, trailingZeros := coefficientDigits(s)
	if int64(digits)+exp > maxWholeDigits {
		return decimal.Decimal{}, CodeMaxWholeDigits, "Ensure that there are no more than 18 digits before the decimal point."
	}
	// Places ignoring trailing zeros, as significantPlaces counts them.
	if exp < 0 && -exp-int64(trailingZeros) > maxAnyDecimalPlaces {
		return decimal.Decimal{}, CodeMaxDecimalPlaces, "Ensure that there are no more than 20 decimal places."
	}
	return d, "", ""
}

// coefficientDigits counts, in a literal that matches decimalSyntax, the
// digits of its coefficient (the mantissa without its point and leading
// zeros) and how many of them are trailing zeros.
func coefficientDigits(s string) (digits, trailingZeros int) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == 'e' || c == 'E':
			return digits, trailingZeros
		case c < '0' || c > '9', c == '0' && digits == 0:
			// sign, point, leading zero
		case c == '0':
			digits++
			trailingZeros++
		default:
			digits++
			trailingZeros = 0
		}
	}
	return digits, trailingZeros
}

// significantPlaces counts decimal places ignoring trailing zeros: 1.10 has
// one, 1.005 has three. The contract limits the value, not how it was
// typed, so "1.100" is accepted as money (it is exactly 1.1).
func significantPlaces(d decimal.Decimal) int {
	exp := d.Exponent()
	if exp >= 0 {
		return 0
	}
	// Every real amount's coefficient fits an int64: counted without the
	// four big.Int allocations of the general case below.
	if d.NumDigits() <= 18 {
		c := d.CoefficientInt64()
		if c == 0 {
			return 0
		}
		places := int(-exp)
		for places > 0 && c%10 == 0 {
			c /= 10
			places--
		}
		return places
	}
	return significantPlacesBig(d)
}

// significantPlacesBig is significantPlaces for any coefficient (the
// general case, and the reference its int64 counting is tested against).
func significantPlacesBig(d decimal.Decimal) int {
	exp := d.Exponent()
	if exp >= 0 {
		return 0
	}
	c := new(big.Int).Abs(d.Coefficient())
	if c.Sign() == 0 {
		return 0
	}
	ten := big.NewInt(10)
	places := int(-exp)
	q, r := new(big.Int), new(big.Int)
	for places > 0 {
		q.QuoRem(c, ten, r)
		if r.Sign() != 0 {
			break
		}
		c.Set(q)
		places--
	}
	return places
}

// Money is an amount of money: a decimal with at most two places (checked by
// the validators) that is always written as a string with exactly two places
// ("12.50"), the form CONTRACT §7 returns amounts in. Output does not depend
// on shopspring/decimal's package-level formatting switches, which any
// other package could flip. Arithmetic goes through the embedded Decimal.
type Money struct{ decimal.Decimal }

// NewMoney wraps d.
func NewMoney(d decimal.Decimal) Money { return Money{d} }

// MoneyFromString parses a literal such as "12.50" (tests, fixtures, CLI).
func MoneyFromString(s string) (Money, error) {
	d, code, detail := parseDecimal(s)
	if code != "" {
		return Money{}, fmt.Errorf("%s: %s", code, detail)
	}
	return Money{d}, nil
}

func (m Money) String() string { return m.StringFixed(moneyDecimalPlaces) }

func (m Money) MarshalJSON() ([]byte, error) { return []byte(`"` + m.String() + `"`), nil }

func (m Money) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalJSON accepts a JSON number or numeric string (staged payloads
// read back with encoding/json).
func (m *Money) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	return m.Decimal.UnmarshalJSON(b)
}
