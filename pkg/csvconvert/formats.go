package csvconvert

import (
	"fmt"
	"strings"
	"time"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/htmlindex"
)

// defaultFormats: ISO dates, a decimal point, common yes/no spellings,
// cells trimmed, times in UTC.
func defaultFormats() formats {
	return formats{
		dates: []string{"2006-01-02"}, dateNames: []string{"YYYY-MM-DD"},
		dateTimes: []string{"2006-01-02T15:04:05Z", "2006-01-02 15:04:05"}, dateTimeNms: []string{"YYYY-MM-DDTHH:mm:ssZ", "YYYY-MM-DD HH:mm:ss"},
		loc:        time.UTC,
		decimalSep: ".",
		trueSet:    lowerSet([]string{"true", "y", "yes", "1"}),
		falseSet:   lowerSet([]string{"false", "n", "no", "0"}),
		trim:       true,
	}
}

// resolveFormats applies the overrides in o to base.
func resolveFormats(base formats, o Formats) (formats, error) {
	f := base
	var err error
	if len(o.Date) > 0 {
		if f.dates, err = layouts(o.Date); err != nil {
			return f, err
		}
		f.dateNames = o.Date
	}
	if len(o.DateTime) > 0 {
		if f.dateTimes, err = layouts(o.DateTime); err != nil {
			return f, err
		}
		f.dateTimeNms = o.DateTime
	}
	if o.TimeZone != "" {
		if f.loc, err = time.LoadLocation(o.TimeZone); err != nil {
			return f, fmt.Errorf("timezone %q: %w", o.TimeZone, err)
		}
	}
	if o.DecimalSeparator != "" {
		f.decimalSep = o.DecimalSeparator
	}
	if o.ThousandsSeparator != nil {
		f.thousands = *o.ThousandsSeparator
	}
	if len(f.decimalSep) != 1 || len(f.thousands) > 1 || f.decimalSep == f.thousands || digits(f.decimalSep) || digits(f.thousands) {
		return f, fmt.Errorf("decimal_separator %q and thousands_separator %q: want two different single non-digit characters (thousands may be empty)", f.decimalSep, f.thousands)
	}
	if len(o.True) > 0 {
		f.trueSet = lowerSet(o.True)
	}
	if len(o.False) > 0 {
		f.falseSet = lowerSet(o.False)
	}
	for k := range f.trueSet {
		if f.falseSet[k] {
			return f, fmt.Errorf("%q is both true and false", k)
		}
	}
	if len(o.Absent) > 0 {
		f.absent = map[string]bool{}
		for _, a := range o.Absent {
			f.absent[a] = true
		}
	}
	if o.Trim != nil {
		f.trim = *o.Trim
	}
	return f, nil
}

func lowerSet(vals []string) map[string]bool {
	m := make(map[string]bool, len(vals))
	for _, v := range vals {
		m[strings.ToLower(v)] = true
	}
	return m
}

// Date tokens of the mapping, longest first, and their Go layout parts.
var dateTokens = []struct{ token, layout string }{
	{"YYYY", "2006"}, {"YY", "06"}, {"MM", "01"}, {"DD", "02"}, {"HH", "15"}, {"mm", "04"}, {"ss", "05"},
	{"M", "1"}, {"D", "2"},
}

// layouts turns formats such as "DD.MM.YYYY" or "YYYYMMDD HH:mm" into Go
// layouts. Only the tokens and separators are allowed: any other letter or
// digit would be read by Go as a layout element of its own.
func layouts(formats []string) ([]string, error) {
	out := make([]string, 0, len(formats))
	for _, f := range formats {
		var b strings.Builder
	next:
		for rest := f; rest != ""; {
			for _, t := range dateTokens {
				if strings.HasPrefix(rest, t.token) {
					b.WriteString(t.layout)
					rest = rest[len(t.token):]
					continue next
				}
			}
			if !strings.ContainsRune(" -./:,_T", rune(rest[0])) {
				return nil, fmt.Errorf("date format %q: %q is not one of YYYY YY MM M DD D HH mm ss or a separator (space - . / : , _ T)", f, rest[:1])
			}
			b.WriteByte(rest[0])
			rest = rest[1:]
		}
		if f == "" {
			return nil, fmt.Errorf("empty date format")
		}
		out = append(out, b.String())
	}
	return out, nil
}

// decoderFor returns the decoder of a character set named as in the WHATWG
// Encoding standard ("windows-1252", "iso-8859-15"); nil for UTF-8.
func decoderFor(name string) (*encoding.Decoder, error) {
	switch strings.ToLower(name) {
	case "", "utf-8", "utf8":
		return nil, nil
	}
	enc, err := htmlindex.Get(name)
	if err != nil {
		return nil, fmt.Errorf("csv.encoding %q: %w", name, err)
	}
	return enc.NewDecoder(), nil
}
