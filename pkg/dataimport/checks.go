package dataimport

import (
	"fmt"
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// Field-level checks shared by every validator. Each appends to a collector
// (collector.go) and never stops, because the contract reports all errors at
// once; the collector alone applies the cap.

const defaultMaxLength = 255 // CONTRACT §5: "max 255 unless noted"

func (c *collector) maxLength(a attr, s string, limit int) {
	if utf8.RuneCountInString(s) > limit {
		c.addAt(a, CodeMaxLength, fmt.Sprintf("Ensure this field has no more than %d characters.", limit))
	}
}

// requiredString checks a field the binder already made present: it must not
// be blank and must fit.
func (c *collector) requiredString(a attr, s string, limit int) {
	if s == "" {
		c.addAt(a, CodeBlank, "This field may not be blank.")
		return
	}
	c.maxLength(a, s, limit)
}

// optionalString checks a field that may be absent or blank. Blank optional
// strings are accepted (and kept) rather than refused: partners export empty
// columns as "", and refusing them would block real migrations for nothing.
func (c *collector) optionalString(a attr, s *string, limit int) {
	if s != nil {
		c.maxLength(a, *s, limit)
	}
}

func choice[T ~string](c *collector, a attr, v T, allowed []T) {
	if v == "" {
		c.addAt(a, CodeBlank, "This field may not be blank.")
		return
	}
	for _, a := range allowed {
		if v == a {
			return
		}
	}
	c.addAt(a, CodeInvalidChoice, fmt.Sprintf("%q is not a valid choice.", string(v)))
}

// money enforces the two-place rule of CONTRACT §5 on the value (1.10 and
// 1.100 are 1.1 and pass; 1.005 does not).
func (c *collector) money(a attr, m Money) {
	if significantPlaces(m.Decimal) > moneyDecimalPlaces {
		c.addAt(a, CodeMaxDecimalPlaces, "Ensure that there are no more than 2 decimal places.")
	}
}

// maxStoredMoney bounds money that lands in a numeric(16,2) column
// (transaction amounts, statement totals): 14 digits before the point. The
// decoder allows 18, which would otherwise surface as a database error.
var maxStoredMoney = decimal.New(1, 14)

func (c *collector) storedMoney(a attr, m Money) {
	if !FitsStoredMoney(m.Decimal) {
		c.addAt(a, CodeMaxWholeDigits, "Ensure that there are no more than 14 digits before the decimal point.")
	}
}

func (c *collector) email(a attr, s *string) {
	if s == nil || *s == "" {
		return
	}
	if utf8.RuneCountInString(*s) > defaultMaxLength {
		c.maxLength(a, *s, defaultMaxLength)
		return
	}
	if !validEmail(*s) {
		c.addAt(a, CodeInvalidEmail, "Enter a valid email address.")
	}
}

// validEmail accepts a bare addr-spec only. net/mail also accepts display
// names ("Bob <bob@x.com>") and comments, which are not e-mail addresses we
// can store, so the parsed address must equal the input exactly. The domain
// must be a host name (letters, digits, hyphens, dots; IDN letters allowed);
// a dot is not required, as some internal relays use single-label hosts.
func validEmail(s string) bool {
	addr, err := mail.ParseAddress(s)
	if err != nil || addr.Name != "" || addr.Address != s {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	if at <= 0 || at == len(s)-1 {
		return false
	}
	for _, label := range strings.Split(s[at+1:], ".") {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return false
		}
		for _, r := range label {
			if r != '-' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				return false
			}
		}
	}
	return true
}

// phone validates a number in the supplier's region and rewrites it in
// E.164. Blank is allowed (and kept blank). A number written in national
// form must be valid in region; one written with +CC must be a valid number
// of its own country (a GB supplier may have customers on foreign mobiles),
// which is what validating "in the region" means for libphonenumber.
func (c *collector) phone(a attr, s *string, region string) {
	if s == nil || *s == "" {
		return
	}
	if utf8.RuneCountInString(*s) > defaultMaxLength {
		c.maxLength(a, *s, defaultMaxLength)
		return
	}
	num, err := parsePhone(*s, region)
	if err != nil || !phoneValid(num) {
		c.addAt(a, CodeInvalidPhoneNumber, "Enter a valid phone number.")
		return
	}
	*s = formatE164(num)
}

// notFuture refuses a date after today. A zero today (caller did not say)
// skips the check rather than refusing every date.
func (c *collector) notFuture(a attr, d *Date, today Date, strictlyPast bool) {
	if d == nil || today.IsZero() {
		return
	}
	if d.After(today) || (strictlyPast && *d == today) {
		detail := "Date may not be in the future."
		if strictlyPast {
			detail = "Date must be in the past."
		}
		c.addAt(a, CodeDateInFuture, detail)
	}
}
