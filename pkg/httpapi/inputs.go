package httpapi

import (
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Limits on what a URL may carry. Identifiers in paths are at most 128
// characters (external account numbers); a cursor encodes one of them.
const (
	maxPathSegment = 255  // characters
	maxQueryValue  = 1024 // characters, of a key or a value
	maxQueryValues = 20
)

// checkURLValues refuses, in one place and before any handler can pass
// them to Postgres, path segments and query values that no request can
// mean: not UTF-8, with NUL or another control character, or longer than
// any identifier. Postgres refuses NUL and invalid UTF-8 in text, which
// used to surface as a 500. A bad path segment names nothing: 404, like an
// unknown one. A bad query is a 400 in the envelope, naming the parameter.
func checkURLValues() gin.HandlerFunc {
	return func(c *gin.Context) {
		for _, p := range c.Params {
			if !cleanText(p.Value, maxPathSegment) {
				renderError(c, dataimport.Errorf(dataimport.CodeNotFound, "Not found."))
				return
			}
		}
		if errs := queryErrors(c.Request.URL.RawQuery); len(errs) > 0 {
			failValidation(c, dataimport.CodeInvalidPayload, "Invalid query parameters.", errs)
			return
		}
		c.Next()
	}
}

// cleanText reports whether s is valid UTF-8 without control characters
// (NUL included) and at most maxRunes characters.
func cleanText(s string, maxRunes int) bool {
	return len(s) <= 4*maxRunes && utf8.ValidString(s) && utf8.RuneCountInString(s) <= maxRunes &&
		!strings.ContainsFunc(s, unicode.IsControl)
}

func queryErrors(raw string) []dataimport.FieldError {
	if raw == "" {
		return nil
	}
	invalid := func(attr, detail string) []dataimport.FieldError {
		return []dataimport.FieldError{{Attr: attr, Code: dataimport.CodeInvalid, Detail: detail}}
	}
	if strings.Count(raw, "&")+1 > maxQueryValues {
		return invalid(dataimport.CodeNonFieldErrors, "At most "+strconv.Itoa(maxQueryValues)+" query parameters are accepted.")
	}
	values, err := url.ParseQuery(raw)
	if err != nil {
		return invalid(dataimport.CodeNonFieldErrors, "The query string is malformed.")
	}
	var errs []dataimport.FieldError
	for _, key := range slices.Sorted(maps.Keys(values)) {
		if !cleanText(key, maxQueryValue) {
			errs = append(errs, invalid(dataimport.CodeNonFieldErrors, "A query parameter name is not valid text.")...)
			continue
		}
		attr := key
		if attr == "" { // "?=x": no name to put in the dot path
			attr = dataimport.CodeNonFieldErrors
		}
		for _, v := range values[key] {
			if !cleanText(v, maxQueryValue) {
				errs = append(errs, invalid(attr, "Must be text of at most "+strconv.Itoa(maxQueryValue)+
					" characters, without control characters.")...)
				break
			}
		}
	}
	return errs
}
