package dataimport

import (
	"encoding/json"
	"testing"
	"time"
)

func TestParseDate(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"2024-02-29", true},
		{"2023-02-29", false}, // not a leap year
		{"2024-13-01", false},
		{"2024-00-10", false},
		{"2024-04-31", false},
		{"0000-01-01", false},
		{"2024-1-01", false},
		{"2024/01/01", false},
		{"2024-01-01T00:00:00Z", false},
		{"２０２４-01-01", false}, // non-ASCII digits
		{"", false},
	} {
		d, err := ParseDate(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseDate(%q) err=%v, want ok=%v", tc.in, err, tc.ok)
		}
		if tc.ok && d.String() != tc.in {
			t.Errorf("round trip %q -> %q", tc.in, d)
		}
	}
}

func TestDateArithmetic(t *testing.T) {
	d := func(s string) Date {
		t.Helper()
		v, err := ParseDate(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct{ got, want Date }{
		{d("2024-01-31").AddMonths(1), d("2024-02-29")}, // clamped, not rolled into March
		{d("2023-01-31").AddMonths(1), d("2023-02-28")},
		{d("2024-12-15").AddMonths(1), d("2025-01-15")},
		{d("2024-03-31").AddMonths(-1), d("2024-02-29")},
		{d("2024-01-15").AddMonths(-13), d("2022-12-15")},
		{d("2024-02-28").AddDays(1), d("2024-02-29")},
		{d("2024-12-31").AddDays(1), d("2025-01-01")},
		{d("2025-03-01").AddDays(-1), d("2025-02-28")},
		{DateOf(time.Date(2025, 6, 1, 23, 30, 0, 0, time.UTC)), d("2025-06-01")},
	} {
		if tc.got != tc.want {
			t.Errorf("got %s want %s", tc.got, tc.want)
		}
	}
	if !d("2024-01-01").Before(d("2024-01-02")) || d("2024-01-02").Before(d("2024-01-01")) || !d("2025-01-01").After(d("2024-12-31")) {
		t.Error("Before/After wrong")
	}
}

func TestDateJSON(t *testing.T) {
	var v struct {
		D  Date      `json:"d"`
		P  *Date     `json:"p"`
		T  DateTime  `json:"t"`
		M  Money     `json:"m"`
		TP *DateTime `json:"tp,omitempty"`
	}
	in := `{"d":"2024-02-29","p":null,"t":"2024-03-01T10:15:30.75+02:00","m":1.5}`
	if err := json.Unmarshal([]byte(in), &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	if want := `{"d":"2024-02-29","p":null,"t":"2024-03-01T08:15:30Z","m":"1.50"}`; string(out) != want {
		t.Errorf("got %s want %s", out, want)
	}
	if err := json.Unmarshal([]byte(`{"d":"2024-02-30"}`), &v); err == nil {
		t.Error("impossible date accepted")
	}
}

func TestParseDateTime(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"2025-06-01T08:00:00+01:00", "2025-06-01T07:00:00Z"},
		{"2025-06-01T08:00:00.999Z", "2025-06-01T08:00:00Z"},
		{"2025-06-01t08:00:00z", ""}, // lower-case separators are not the documented form
		{"2025-06-01T08:00:00", ""},  // offset required
		{"2025-06-01", ""},
		{"0000-01-01T00:00:00+01:00", ""}, // year -1 in UTC
		{"9999-12-31T23:00:00-02:00", ""}, // year 10000 in UTC
		{"0001-01-01T00:00:00Z", "0001-01-01T00:00:00Z"},
	} {
		got, err := ParseDateTime(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%q accepted as %s", tc.in, got)
			}
			continue
		}
		if err != nil || got.String() != tc.want {
			t.Errorf("%q: got %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}
