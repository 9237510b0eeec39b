package csvconvert

import (
	"strings"
	"testing"
)

func TestNormaliseDecimal(t *testing.T) {
	for _, tc := range []struct {
		in, sep, thousands, want string // want "" = refused
	}{
		{"1.234,56", ",", ".", "1234.56"},
		{"1.234.567,5", ",", ".", "1234567.5"},
		{"12,50-", ",", ".", "-12.50"},
		{"-45,10", ",", ".", "-45.10"},
		{"+3,00", ",", ".", "3.00"},
		{",50", ",", ".", "0.50"},
		{"007", ",", ".", "7"},
		{"0,00", ",", ".", "0.00"},
		{"1,234.56", ".", ",", "1234.56"},
		{"1234.56", ".", "", "1234.56"},
		{"1.23,4", ",", ".", ""},  // groups of three only
		{"12.5,40", ",", ".", ""}, // ditto
		{"1234.56", ",", ".", ""}, // a dot is not this file's decimal separator
		{"1,2,3", ",", ".", ""},   // two decimal separators
		{"12,", ",", ".", ""},     // no digits after the separator
		{"1e5", ".", "", ""},      // no exponents
		{"--1", ".", "", ""},      // one sign
		{"-1-", ".", "", ""},      // one sign
		{"", ".", "", ""},         // nothing
		{"١٢", ".", "", ""},       // ASCII digits only
		{"1 234,5", ",", ".", ""}, // spaces are not separators here
		{"1 234,5", ",", " ", "1234.5"},
	} {
		got, ok := normaliseDecimal(tc.in, tc.sep, tc.thousands)
		if !ok {
			got = ""
		}
		if got != tc.want {
			t.Errorf("normaliseDecimal(%q, %q, %q) = %q, want %q", tc.in, tc.sep, tc.thousands, got, tc.want)
		}
	}
}

func TestCellValues(t *testing.T) {
	f, err := resolveFormats(defaultFormats(), Formats{
		Date: []string{"DD.MM.YYYY", "YYYYMMDD"}, DateTime: []string{"DD.MM.YYYY HH:mm"}, TimeZone: "Europe/London",
		DecimalSeparator: ",", True: []string{"J", "Y"}, False: []string{"N"}, Absent: []string{"00.00.0000"},
	})
	if err != nil {
		t.Fatal(err)
	}
	col := func(k kind) *column { return &column{kind: k, f: f} }
	for _, tc := range []struct {
		c      *column
		in     string
		want   string // JSON; "-" absent
		reason string // substring of the refusal
	}{
		{col(kindDate), "03.05.2021", `"2021-05-03"`, ""},
		{col(kindDate), "20210503", `"2021-05-03"`, ""},
		{col(kindDate), " 03.05.2021 ", `"2021-05-03"`, ""}, // trimmed
		{col(kindDate), "29.02.2023", "", "not a date in format DD.MM.YYYY or YYYYMMDD"},
		{col(kindDate), "3.5.2021", "", "not a date"},
		{col(kindDate), "00.00.0000", "-", ""},
		{col(kindDate), "", "-", ""},
		{col(kindDateTime), "30.03.2025 00:30", `"2025-03-30T00:30:00Z"`, ""}, // GMT
		{col(kindDateTime), "30.03.2025 03:30", `"2025-03-30T02:30:00Z"`, ""}, // BST
		{col(kindDecimal), "1.234,5", "", "not a decimal"},                    // no thousands separator set here
		{col(kindDecimal), "1234,5", `1234.5`, ""},
		{col(kindBool), "j", `true`, ""},
		{col(kindBool), "N", `false`, ""},
		{col(kindBool), "Yes", "", `not a boolean (true: j, y; false: n)`},
		{col(kindInteger), "0042", `42`, ""},
		{col(kindInteger), "4.2", "", "not an integer"},
		{col(kindString), `say "hi" <b>`, `"say \"hi\" \u003cb\u003e"`, ""},
		{col(kindString), "caf\xe9", "", "not valid UTF-8"},
		{&column{kind: kindString, f: f, valueMap: map[string]string{"E": "ELECTRICITY", "G": "GAS"}}, "G", `"GAS"`, ""},
		{&column{kind: kindString, f: f, valueMap: map[string]string{"E": "ELECTRICITY", "G": "GAS"}}, "X", "", `"X" is not one of the mapped values (E, G)`},
		{&column{kind: kindString, f: f, required: true}, " ", "", "is empty but required"},
		// The account number follows the API's one identifier rule
		// (dataimport.IdentifierProblem): what a URL can carry passes.
		{&column{kind: kindString, f: f, full: identifierPath}, "ACC/7", `"ACC/7"`, ""},
		{&column{kind: kindString, f: f, full: identifierPath}, "..", "", `may not be "." or ".."`},
		{&column{kind: kindString, f: f, full: identifierPath}, "a\tb", "", "control characters"},
		{&column{kind: kindString, f: f, full: "customers[].first_name"}, "..", `".."`, ""},
	} {
		v, present, reason := tc.c.value(tc.in)
		switch {
		case tc.reason != "":
			if !strings.Contains(reason, tc.reason) {
				t.Errorf("%s %q: reason %q, want %q", tc.c.kind, tc.in, reason, tc.reason)
			}
		case reason != "":
			t.Errorf("%s %q: refused: %s", tc.c.kind, tc.in, reason)
		case tc.want == "-" && present:
			t.Errorf("%s %q: got %s, want absent", tc.c.kind, tc.in, v)
		case tc.want != "-" && string(v) != tc.want:
			t.Errorf("%s %q: got %s, want %s", tc.c.kind, tc.in, v, tc.want)
		}
	}
}

func TestDateFormats(t *testing.T) {
	got, err := layouts([]string{"DD.MM.YYYY", "YYYYMMDD", "D/M/YY", "YYYY-MM-DDTHH:mm:ss"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "02.01.2006 20060102 2/1/06 2006-01-02T15:04:05" {
		t.Fatalf("layouts %q", got)
	}
	for _, bad := range []string{"DD.MM.YYYY 2006", "dd.mm.yyyy", "Jan 2 2006", ""} {
		if _, err := layouts([]string{bad}); err == nil {
			t.Errorf("format %q accepted", bad)
		}
	}
}
