package dataimport

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// IdentifierProblem is the one rule for an external account number the API
// accepts (JSON, bulk jobs, CSV conversion): it becomes a path segment of
// every URL the API and the console emit for the account (status, cancel,
// timeline, console page, skip form), so it must survive a round trip
// through those URLs. Characters such as "/", "%", "?", "#" and spaces do:
// every URL is built with url.PathEscape and the router matches the escaped
// path. What cannot is refused here: control characters (refused in every
// path segment), text that is not UTF-8, and the dot segments "." and "..",
// which browsers and HTTP clients remove from a path before sending it
// (even spelt %2E). It returns "" for an addressable identifier.
func IdentifierProblem(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "This field must be valid UTF-8 text."
	case strings.ContainsFunc(s, unicode.IsControl):
		return "This field may not contain control characters."
	case s == "." || s == "..":
		return `This field may not be "." or "..": no URL can address it.`
	}
	return ""
}

// identifier checks a required external account number: present, at most
// maxExternalAccountNumber characters, and addressable (IdentifierProblem).
func (c *collector) identifier(a attr, s string) {
	c.requiredString(a, s, maxExternalAccountNumber)
	if s == "" {
		return
	}
	if p := IdentifierProblem(s); p != "" {
		c.addAt(a, CodeInvalid, p)
	}
}
