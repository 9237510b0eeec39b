// Package gb is the Great Britain energy market's rule set: MPAN and MPRN
// formats, profile classes, postcodes and priority services register codes.
// Pure Go, no I/O.
package gb

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Name is the supplier setting that selects this market.
const Name = "GB"

// Market implements dataimport.Market for GB.
type Market struct{}

var _ dataimport.Market = Market{}

func (Market) Name() string { return Name }

// mpanWeights are the MRA's check-digit weights over the first 12 digits
// of an MPAN core (primes, 11 left out).
var mpanWeights = [12]int{3, 5, 7, 13, 17, 19, 23, 29, 31, 37, 41, 43}

// ValidMPANCore reports whether s is a 13-digit MPAN core whose last digit
// is its check digit: the weighted sum of the first 12, mod 11, mod 10.
func ValidMPANCore(s string) bool {
	if len(s) != 13 || !allDigits(s) {
		return false
	}
	return MPANCheckDigit(s[:12]) == int(s[12]-'0')
}

// MPANCheckDigit is the check digit of an MPAN core's first 12 digits
// (which the caller has checked are digits).
func MPANCheckDigit(first12 string) int {
	sum := 0
	for i, w := range mpanWeights {
		sum += int(first12[i]-'0') * w
	}
	return sum % 11 % 10
}

// ValidMPRN checks an MPRN's format: 6 to 10 digits, not starting with 0.
// Xoserve allocates MPRNs with check digits, but we found no published
// algorithm with worked examples, so only the format is checked.
func ValidMPRN(s string) bool {
	return len(s) >= 6 && len(s) <= 10 && allDigits(s) && s[0] != '0'
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// sscFormat: a Standard Settlement Configuration id is four digits.
var sscFormat = regexp.MustCompile(`^[0-9]{4}$`)

// MeterPoint checks the meter point's MPxN for its fuel, and that profile
// class (0-8) and SSC, which are electricity settlement data, are given only
// for electricity.
func (Market) MeterPoint(mp *dataimport.MeterPoint, report func(field, code, detail string)) {
	switch mp.Fuel {
	case dataimport.FuelElectricity:
		if mp.MPXN != "" && !ValidMPANCore(mp.MPXN) {
			report("mpxn", dataimport.CodeInvalidMPAN, "An electricity meter point's mpxn must be a 13-digit MPAN core with a valid check digit.")
		}
		if mp.ProfileClass != nil && (*mp.ProfileClass < 0 || *mp.ProfileClass > 8) {
			report("profile_class", dataimport.CodeInvalidProfileClass, "profile_class must be from 0 to 8.")
		}
		if mp.SSC != nil && *mp.SSC != "" && !sscFormat.MatchString(*mp.SSC) {
			report("ssc", dataimport.CodeInvalidSSC, "ssc must be a four-digit Standard Settlement Configuration id.")
		}
	case dataimport.FuelGas:
		if mp.MPXN != "" && !ValidMPRN(mp.MPXN) {
			report("mpxn", dataimport.CodeInvalidMPRN, "A gas meter point's mpxn must be an MPRN of 6 to 10 digits.")
		}
		if mp.ProfileClass != nil {
			report("profile_class", dataimport.CodeInvalidProfileClass, "profile_class applies to electricity meter points only.")
		}
		if mp.SSC != nil && *mp.SSC != "" {
			report("ssc", dataimport.CodeInvalidSSC, "ssc applies to electricity meter points only.")
		}
	}
}

// postcodeFormat is the GB postcode: outward code (area, district) and
// inward code (sector, unit), with GIR 0AA, the one historic exception.
// Spacing and case are the partner's; one optional space is accepted.
var postcodeFormat = regexp.MustCompile(`^(GIR ?0AA|[A-PR-UWYZ][0-9][0-9A-HJKPSTUW]? ?[0-9][ABD-HJLNP-UW-Z]{2}|[A-PR-UWYZ][A-HK-Y][0-9][0-9ABEHMNPRVWXY]? ?[0-9][ABD-HJLNP-UW-Z]{2})$`)

// ValidPostcode reports whether s is a GB postcode.
func ValidPostcode(s string) bool {
	return postcodeFormat.MatchString(strings.ToUpper(strings.TrimSpace(s)))
}

func (Market) Postcode(postcode string) (string, string) {
	if ValidPostcode(postcode) {
		return "", ""
	}
	return dataimport.CodeInvalidPostcode, fmt.Sprintf("%q is not a GB postcode.", postcode)
}

// maxPSRCode bounds the GB industry's harmonised priority services register
// needs-code range (two-digit codes 01-36, as exchanged between suppliers
// and network operators). A code may be written with or without its
// leading zero.
const maxPSRCode = 36

func (Market) PSRCode(code string) bool {
	if len(code) == 0 || len(code) > 2 || !allDigits(code) {
		return false
	}
	n, err := strconv.Atoi(code)
	return err == nil && n >= 1 && n <= maxPSRCode
}
