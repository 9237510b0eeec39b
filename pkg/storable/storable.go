// Package storable is the one place text from outside the service (webhook
// receivers' answers, payment vendors' and SMTP servers' errors, anything
// else no validator refused first) is made fit to store. Postgres refuses a
// NUL byte or invalid UTF-8 in text and a \u0000 escape in jsonb; a write
// refused for that loses the record it was part of (a webhook attempt never
// logged is sent again forever), so such text is cleaned, never refused.
package storable

import (
	"strings"
	"unicode/utf8"
)

// Text returns s as valid UTF-8 (each invalid byte sequence replaced by
// U+FFFD) without NUL bytes (dropped), at most max bytes long, cut at a rune
// boundary. max <= 0 means no bound.
func Text(s string, max int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	if max > 0 && len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

// Bytes is Text of a body read from outside.
func Bytes(b []byte, max int) string { return Text(string(b), max) }
