package dataimport

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// maxJSONDepth bounds nesting of objects and arrays. The deepest real account
// path is about 8 levels; 64 leaves room for any future shape while a hostile
// "[[[[..." body is refused before it costs anything.
const maxJSONDepth = 64

// checkJSON accepts a body the reader below may trust: valid UTF-8, one
// syntactically valid JSON value nested at most maxJSONDepth deep. The one
// pass that checks the syntax also appends to counts the element count of
// each array (at most maxCountedArrays), so the binder does not scan an
// array once more to size its slice, nor nested arrays once per level. It
// builds nothing else, so it costs the same for any shape of body.
//
// The syntax check accepts exactly what encoding/json accepts
// (FuzzCheckJSON holds it to json.Valid); what it refuses is refused with
// encoding/json's own message, so the answer to a bad body is the one the
// API always gave. It replaced json.Valid in front of a second pass for the
// depth and the counts: a fifth of the time to validate an account.
func checkJSON(body []byte, counts []arrayLen) ([]arrayLen, *Error) {
	if !utf8.Valid(body) {
		return nil, parseError("body is not valid UTF-8")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, parseError("empty body")
	}
	counts, valid, deep := scanJSON(body, counts)
	if valid {
		return counts, nil
	}
	// Refused, or nested too deep before the syntax was known: what
	// encoding/json says decides, as it always did.
	if !json.Valid(body) {
		var raw json.RawMessage // validates without building anything
		err := json.Unmarshal(body, &raw)
		if err == nil { // cannot happen; keep a reason anyway
			err = errors.New("invalid JSON")
		}
		return nil, parseError(err.Error())
	}
	if deep {
		return nil, parseError(errTooDeep.Error())
	}
	// encoding/json accepts what the scan refused: cannot happen (see
	// FuzzCheckJSON); accept it as encoding/json does, and let the binder
	// count the arrays itself.
	return nil, nil
}

func parseError(reason string) *Error {
	return &Error{Code: CodeParseError, Detail: "JSON parse error - " + reason}
}

var errTooDeep = fmt.Errorf("nesting deeper than %d levels", maxJSONDepth)

// arrayLen is the number of elements of the array whose '[' is at off.
type arrayLen struct{ off, n int }

// maxCountedArrays bounds the counts kept for one body (a real account has
// a few dozen arrays); arrays past it are counted when bound, as before.
const maxCountedArrays = 1024

// scanJSON checks that b is one JSON value (RFC 8259, as encoding/json
// reads it) and appends to counts the element count of each array (the
// first maxCountedArrays), in document order. It stops at the first error
// (valid false) and at nesting beyond maxJSONDepth (deep true, valid false:
// the rest is not checked). It keeps no stack but a fixed array, so any
// body costs constant memory.
func scanJSON(b []byte, counts []arrayLen) (out []arrayLen, valid, deep bool) {
	var kind [maxJSONDepth + 1]byte // per depth: '{' or '['
	var open [maxJSONDepth + 1]int  // per depth: the index in counts of the open array, or -1
	depth := 0
	i := skipSpace(b, 0)
	for {
		// A value starts at i.
		if i >= len(b) {
			return counts, false, false
		}
		ok := true
		switch c := b[i]; {
		case c == '{' || c == '[':
			if depth++; depth > maxJSONDepth {
				return counts, false, true
			}
			kind[depth], open[depth] = c, -1
			at := i
			i = skipSpace(b, i+1)
			empty := i < len(b) && b[i] == c+2 // '}' is '{'+2, ']' is '['+2
			if c == '[' && len(counts) < maxCountedArrays {
				open[depth] = len(counts)
				n := 1
				if empty {
					n = 0
				}
				counts = append(counts, arrayLen{off: at, n: n})
			}
			if empty {
				i++
				depth--
				break // the value ends here
			}
			if c == '{' {
				if i, ok = objectKey(b, i); !ok {
					return counts, false, false
				}
			}
			continue // the first member's value starts at i
		case c == '"':
			i, ok = scanString(b, i)
		case c == 't':
			i, ok = scanLiteral(b, i, "true")
		case c == 'f':
			i, ok = scanLiteral(b, i, "false")
		case c == 'n':
			i, ok = scanLiteral(b, i, "null")
		case c == '-' || (c >= '0' && c <= '9'):
			i, ok = scanNumber(b, i)
		default:
			ok = false
		}
		if !ok {
			return counts, false, false
		}
		// A value ended just before i: close containers, or find the next
		// member or element.
		for {
			i = skipSpace(b, i)
			if depth == 0 {
				return counts, i == len(b), false
			}
			if i >= len(b) {
				return counts, false, false
			}
			c := b[i]
			if c == kind[depth]+2 { // the open container's end
				i++
				depth--
				continue
			}
			if c != ',' {
				return counts, false, false
			}
			i = skipSpace(b, i+1)
			if kind[depth] == '[' {
				if k := open[depth]; k >= 0 {
					counts[k].n++
				}
			} else if i, ok = objectKey(b, i); !ok {
				return counts, false, false
			}
			break
		}
	}
}

// objectKey reads `"key" :` and the space after it, from i.
func objectKey(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	i, ok := scanString(b, i)
	if !ok {
		return i, false
	}
	if i = skipSpace(b, i); i >= len(b) || b[i] != ':' {
		return i, false
	}
	return skipSpace(b, i+1), true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString reads the string whose quote is at b[i]: no control
// characters, only JSON's escapes.
func scanString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			if i++; i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return i, false
				}
				for _, h := range b[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return i, false
					}
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

func scanLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// scanNumber reads -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? from i.
func scanNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
