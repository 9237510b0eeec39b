package storable_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gridshift/dataimport/pkg/storable"
)

func TestText(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"ok\x00", 0, "ok"},
		{"a\xffb", 0, "a\uFFFDb"},
		{"\xff\xfeo\x00k\x00", 0, "\uFFFD" + "o" + "k"}, // UTF-16LE "ok": BOM then NULs
		{"héllo", 2, "h"},                               // é is two bytes: not cut in half
		{"héllo", 3, "hé"},
		{"plain", 10, "plain"},
		{"", 5, ""},
	} {
		if got := storable.Text(tc.in, tc.max); got != tc.want {
			t.Errorf("Text(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
	if got := storable.Bytes([]byte(strings.Repeat("x", 1<<20)+"\x00"), 512); len(got) != 512 {
		t.Errorf("Bytes of 1 MB kept %d bytes", len(got))
	}
}

// FuzzText: whatever comes in, what comes out is storable in Postgres text
// (valid UTF-8, no NUL), within the bound, and unchanged when it already was.
func FuzzText(f *testing.F) {
	for _, s := range []string{"ok\x00", "\xff\xfe", "h\u00e9llo", "\xe2\x82", strings.Repeat("\u20ac", 200)} {
		f.Add(s, 7)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		max %= 1 << 12
		got := storable.Text(s, max)
		if !utf8.ValidString(got) || strings.IndexByte(got, 0) >= 0 {
			t.Fatalf("Text(%q, %d) = %q: not storable", s, max, got)
		}
		if max > 0 && len(got) > max {
			t.Fatalf("Text(%q, %d) = %d bytes", s, max, len(got))
		}
		if utf8.ValidString(s) && !strings.Contains(s, "\x00") && (max <= 0 || len(s) <= max) && got != s {
			t.Fatalf("Text changed clean %q to %q", s, got)
		}
		if b := storable.Bytes([]byte(s), max); b != got {
			t.Fatalf("Bytes(%q, %d) = %q, Text gave %q", s, max, b, got)
		}
	})
}
