package dataimport

import "github.com/shopspring/decimal"

// The magnitude checks below run on every amount of every account. Through
// decimal.Decimal's own methods each costs a few big.Int copies (Abs,
// Truncate, the rescaling in Cmp, String); every real amount's coefficient
// fits an int64, so these answer from it and its exponent instead, and the
// big.Int versions stay for the rest (and as the tests' reference).

// pow10s[i] is 10^i, for i up to 18 (10^18 is the last power in an int64).
var pow10s = func() (p [19]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// smallCoefficient returns |coefficient| and the exponent of d when the
// coefficient has at most 18 digits (ok false otherwise).
func smallCoefficient(d decimal.Decimal) (abs uint64, exp int64, ok bool) {
	if d.NumDigits() > 18 {
		return 0, 0, false
	}
	c := d.CoefficientInt64()
	if c < 0 {
		c = -c // |c| < 10^18: no overflow
	}
	return uint64(c), int64(d.Exponent()), true
}

// absBelowPow10 reports c·10^exp < 10^n, for c < 10^18.
func absBelowPow10(c uint64, exp int64, n int64) bool {
	switch k := n - exp; { // c < 10^k
	case c == 0:
		return true
	case k <= 0:
		return false // c ≥ 1 ≥ 10^k
	case k >= int64(len(pow10s)):
		return true // c < 10^18 ≤ 10^k
	default:
		return c < pow10s[k]
	}
}

// wholeDigitsSmall is wholeDigits of c·10^exp, for c < 10^18: the digits of
// its integer part, 0 when that is 0.
func wholeDigitsSmall(c uint64, exp int64) int {
	if exp < 0 {
		if -exp >= int64(len(pow10s)) {
			return 0 // c < 10^18 ≤ 10^-exp
		}
		c /= pow10s[-exp]
		exp = 0
	}
	if c == 0 {
		return 0
	}
	n := 1
	for c >= 10 {
		c /= 10
		n++
	}
	return n + int(exp)
}
