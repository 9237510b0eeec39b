package csvconvert

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// column is one mapped cell: where it goes and how its text becomes a value.
type column struct {
	name     string // header name
	path     string
	full     string // from the account: "customers[].date_of_birth"
	steps    []step
	kind     kind
	required bool
	valueMap map[string]string
	f        formats
}

// formats is Formats with the defaults and overrides resolved.
type formats struct {
	dates, dateTimes       []string // Go layouts
	dateNames, dateTimeNms []string // as written in the mapping, for messages
	loc                    *time.Location
	decimalSep, thousands  string
	trueSet, falseSet      map[string]bool // lower case
	absent                 map[string]bool
	trim                   bool
}

// value turns a cell into an encoded JSON value. present is false when the
// cell means "absent" (empty, or one of the absent values); reason is set
// when the cell cannot be mapped.
func (c *column) value(cell string) (v json.RawMessage, present bool, reason string) {
	if c.f.trim {
		cell = strings.TrimSpace(cell)
	}
	if cell == "" || c.f.absent[cell] {
		if c.required {
			return nil, false, "is empty but required"
		}
		return nil, false, ""
	}
	if !utf8.ValidString(cell) {
		return nil, false, "is not valid UTF-8 (set csv.encoding to the export's character set)"
	}
	if strings.ContainsRune(cell, 0) {
		return nil, false, "contains a NUL character"
	}
	if c.valueMap != nil {
		m, ok := c.valueMap[cell]
		if !ok {
			return nil, false, fmt.Sprintf("%q is not one of the mapped values (%s)", cell, mapKeys(c.valueMap))
		}
		cell = m
	}
	switch c.kind {
	case kindString:
		if c.full == identifierPath {
			// The API's one identifier rule, so a converted file is not
			// refused account by account at upload.
			if p := dataimport.IdentifierProblem(cell); p != "" {
				return nil, false, fmt.Sprintf("%q: %s", cell, p)
			}
		}
		b, _ := json.Marshal(cell)
		return b, true, ""
	case kindDate:
		t, ok := parseTime(cell, c.f.dates, time.UTC)
		if !ok {
			return nil, false, fmt.Sprintf("%q is not a date in format %s", cell, strings.Join(c.f.dateNames, " or "))
		}
		return quoted(t.Format("2006-01-02")), true, ""
	case kindDateTime:
		t, ok := parseTime(cell, c.f.dateTimes, c.f.loc)
		if y := t.UTC().Year(); !ok || y < 1 || y > 9999 {
			return nil, false, fmt.Sprintf("%q is not a date-time in format %s", cell, strings.Join(c.f.dateTimeNms, " or "))
		}
		return quoted(t.UTC().Format("2006-01-02T15:04:05Z")), true, ""
	case kindDecimal:
		d, ok := normaliseDecimal(cell, c.f.decimalSep, c.f.thousands)
		if !ok {
			return nil, false, fmt.Sprintf("%q is not a decimal with separator %q%s", cell, c.f.decimalSep, thousandsNote(c.f.thousands))
		}
		return json.RawMessage(d), true, ""
	case kindInteger:
		n, err := strconv.ParseInt(cell, 10, 64)
		if err != nil {
			return nil, false, fmt.Sprintf("%q is not an integer", cell)
		}
		return strconv.AppendInt(nil, n, 10), true, ""
	case kindBool:
		switch l := strings.ToLower(cell); {
		case c.f.trueSet[l]:
			return json.RawMessage("true"), true, ""
		case c.f.falseSet[l]:
			return json.RawMessage("false"), true, ""
		}
		return nil, false, fmt.Sprintf("%q is not a boolean (true: %s; false: %s)", cell, setKeys(c.f.trueSet), setKeys(c.f.falseSet))
	}
	return nil, false, "cannot be mapped to a " + c.kind.String()
}

// identifierPath is the account's identifier, which must be addressable in
// the API's URLs (dataimport.IdentifierProblem).
const identifierPath = "external_account_number"

func quoted(s string) json.RawMessage { return json.RawMessage(`"` + s + `"`) }

func parseTime(s string, layouts []string, loc *time.Location) (time.Time, bool) {
	for _, l := range layouts {
		if t, err := time.ParseInLocation(l, s, loc); err == nil && t.Year() >= 1 {
			return t, true
		}
	}
	return time.Time{}, false
}

// normaliseDecimal turns "1.234,56", "-12,5" or SAP's trailing minus
// "12,50-" into a JSON number ("1234.56"): digits only, the thousands
// separator accepted only between proper groups of three, so "1.23,4" is an
// error rather than a guess. The digits are kept exactly (no float).
func normaliseDecimal(s, sep, thousands string) (string, bool) {
	neg := false
	switch {
	case strings.HasSuffix(s, "-"):
		neg, s = true, s[:len(s)-1]
	case strings.HasPrefix(s, "-"):
		neg, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	intPart, frac, hasFrac := strings.Cut(s, sep)
	if hasFrac && (frac == "" || !digits(frac)) {
		return "", false
	}
	if thousands != "" && strings.Contains(intPart, thousands) {
		groups := strings.Split(intPart, thousands)
		if len(groups[0]) < 1 || len(groups[0]) > 3 {
			return "", false
		}
		for _, g := range groups[1:] {
			if len(g) != 3 {
				return "", false
			}
		}
		intPart = strings.Join(groups, "")
	}
	if intPart == "" && hasFrac {
		intPart = "0" // ",50"
	}
	if !digits(intPart) {
		return "", false
	}
	intPart = strings.TrimLeft(intPart, "0")
	if intPart == "" {
		intPart = "0"
	}
	out := intPart
	if hasFrac {
		out += "." + frac
	}
	if neg {
		out = "-" + out
	}
	return out, true
}

func digits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func thousandsNote(t string) string {
	if t == "" {
		return ""
	}
	return fmt.Sprintf(" and thousands separator %q", t)
}
