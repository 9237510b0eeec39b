package dataimport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// Date is a civil calendar date (no time, no zone). The contract's dates
// (date_of_birth, supply_start_date, transaction_date, ...) are days, not
// instants; carrying them as time.Time invites off-by-one-day bugs whenever a
// zone sneaks in, so they get their own value type.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// DateLayout is the only accepted wire form of a Date.
const DateLayout = "2006-01-02"

// ParseDate parses exactly YYYY-MM-DD and rejects impossible days (2023-02-29)
// instead of normalising them the way time.Date would.
func ParseDate(s string) (Date, error) { return parseDate(s) }

// parseDate also reads the bytes of a request body, which the binder would
// otherwise copy into a string for every date.
func parseDate[T string | []byte](s T) (Date, error) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return Date{}, fmt.Errorf("date %q is not YYYY-MM-DD", s)
	}
	for i := range len(s) {
		if i == 4 || i == 7 {
			continue
		}
		if c := s[i]; c < '0' || c > '9' {
			return Date{}, fmt.Errorf("date %q is not YYYY-MM-DD", s)
		}
	}
	y := atoi(s[0:4])
	m := atoi(s[5:7])
	d := atoi(s[8:10])
	if y < 1 || m < 1 || m > 12 || d < 1 || d > daysIn(time.Month(m), y) {
		return Date{}, fmt.Errorf("date %q does not exist", s)
	}
	return Date{Year: y, Month: time.Month(m), Day: d}, nil
}

func atoi[T string | []byte](s T) int {
	n := 0
	for i := range len(s) {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

func daysIn(m time.Month, year int) int {
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// DateOf returns the calendar date of t in t's own location. Callers decide
// the zone ("today" for a UK supplier is DateOf(now.In(London))).
func DateOf(t time.Time) Date {
	y, m, d := t.Date()
	return Date{Year: y, Month: m, Day: d}
}

// IsZero reports whether d is the zero Date (never a valid parsed date).
func (d Date) IsZero() bool { return d == Date{} }

// Time returns midnight UTC at the start of d.
func (d Date) Time() time.Time { return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC) }

func (d Date) String() string { return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day) }

// Compare returns -1, 0 or +1 as d is before, equal to or after o.
func (d Date) Compare(o Date) int {
	switch {
	case d.Year != o.Year:
		return cmpInt(d.Year, o.Year)
	case d.Month != o.Month:
		return cmpInt(int(d.Month), int(o.Month))
	default:
		return cmpInt(d.Day, o.Day)
	}
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (d Date) Before(o Date) bool { return d.Compare(o) < 0 }
func (d Date) After(o Date) bool  { return d.Compare(o) > 0 }

// AddDays moves d by n days (n may be negative).
func (d Date) AddDays(n int) Date { return DateOf(d.Time().AddDate(0, 0, n)) }

// AddMonths moves d by n months, clamping to the last day of the target month
// (Jan 31 + 1 month = Feb 28/29). time.AddDate would roll over into March,
// which is never what a billing period means.
func (d Date) AddMonths(n int) Date {
	total := d.Year*12 + int(d.Month-1) + n
	y, m := total/12, time.Month(total%12+1)
	if total%12 < 0 { // keep the month in 1..12 for negative totals
		y, m = y-1, m+12
	}
	day := min(d.Day, daysIn(m, y))
	return Date{Year: y, Month: m, Day: day}
}

// MarshalJSON writes "YYYY-MM-DD"; the zero Date is written as null so an
// unset value never masquerades as year 0.
func (d Date) MarshalJSON() ([]byte, error) {
	if d.IsZero() {
		return []byte("null"), nil
	}
	return []byte(`"` + d.String() + `"`), nil
}

// UnmarshalJSON lets staged payloads be read back with plain encoding/json.
func (d *Date) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	p, err := ParseDate(s)
	if err != nil {
		return err
	}
	*d = p
	return nil
}

// DateTime is an instant on the wire as YYYY-MM-DDTHH:MM:SSZ. Input accepts
// any RFC 3339 offset; it is normalised to UTC and truncated to the second,
// so what we store is exactly what we echo back (and duplicate-note matching
// on created_at compares like with like).
type DateTime struct{ time.Time }

// DateTimeLayout is the output form of a DateTime.
const DateTimeLayout = "2006-01-02T15:04:05Z"

// NewDateTime normalises t the same way decoding does.
func NewDateTime(t time.Time) DateTime { return DateTime{t.UTC().Truncate(time.Second)} }

// ParseDateTime parses an RFC 3339 timestamp (offset required). The instant
// must fall in years 0001-9999 once in UTC, so that what we write back
// ("0000-01-01T00:00:00+01:00" would become year -1) parses again.
func ParseDateTime(s string) (DateTime, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return DateTime{}, err
	}
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return DateTime{}, fmt.Errorf("datetime %q is out of range", s)
	}
	return NewDateTime(t), nil
}

func (t DateTime) String() string { return t.UTC().Format(DateTimeLayout) }

func (t DateTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.String() + `"`), nil
}

func (t DateTime) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

func (t *DateTime) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	return t.UnmarshalText([]byte(s))
}

func (t *DateTime) UnmarshalText(b []byte) error {
	p, err := ParseDateTime(string(b))
	if err != nil {
		return err
	}
	*t = p
	return nil
}
