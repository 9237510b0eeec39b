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

// jsonObject keeps the keys in document order so errors come out in a stable,
// readable order (a Go map would shuffle them on every request).
type jsonObject struct {
	keys []string
	vals []any
	dups []string // keys given more than once; the first value is kept
}

// parseJSON reads body into generic values: nil, bool, json.Number, string,
// []any and *jsonObject. Numbers stay json.Number so no amount ever passes
// through float64.
//
// Syntax is checked first by encoding/json's iterative validator (fast,
// constant stack, exact error messages); the tree is then built by a small
// reader that may trust the syntax. This is several times faster than
// json.Decoder.Token, which allocates per token.
func parseJSON(body []byte) (any, *Error) {
	if !utf8.Valid(body) {
		return nil, parseError("body is not valid UTF-8")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, parseError("empty body")
	}
	if !json.Valid(body) {
		var raw json.RawMessage // validates without building anything
		err := json.Unmarshal(body, &raw)
		if err == nil { // cannot happen; keep a reason anyway
			err = errors.New("invalid JSON")
		}
		return nil, parseError(err.Error())
	}
	r := jsonReader{buf: body}
	v, err := r.value(0)
	if err != nil {
		return nil, parseError(err.Error())
	}
	return v, nil
}

func parseError(reason string) *Error {
	return &Error{Code: CodeParseError, Detail: "JSON parse error - " + reason}
}

var errTooDeep = fmt.Errorf("nesting deeper than %d levels", maxJSONDepth)

// jsonReader builds generic values from syntactically valid JSON.
type jsonReader struct {
	buf []byte
	pos int
}

func (r *jsonReader) skipSpace() {
	for r.pos < len(r.buf) {
		switch r.buf[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

func (r *jsonReader) value(depth int) (any, error) {
	r.skipSpace()
	if r.pos >= len(r.buf) {
		return nil, errors.New("unexpected end of JSON input")
	}
	switch c := r.buf[r.pos]; c {
	case '{':
		if depth >= maxJSONDepth {
			return nil, errTooDeep
		}
		return r.object(depth + 1)
	case '[':
		if depth >= maxJSONDepth {
			return nil, errTooDeep
		}
		return r.array(depth + 1)
	case '"':
		return r.str()
	case 't':
		r.pos += len("true")
		return true, nil
	case 'f':
		r.pos += len("false")
		return false, nil
	case 'n':
		r.pos += len("null")
		return nil, nil
	default: // number
		start := r.pos
		for r.pos < len(r.buf) && isNumberByte(r.buf[r.pos]) {
			r.pos++
		}
		return json.Number(r.buf[start:r.pos]), nil
	}
}

func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

func (r *jsonReader) object(depth int) (any, error) {
	r.pos++ // '{'
	obj := &jsonObject{}
	var index map[string]struct{}
	for {
		r.skipSpace()
		if r.buf[r.pos] == '}' {
			r.pos++
			return obj, nil
		}
		if r.buf[r.pos] == ',' {
			r.pos++
			r.skipSpace()
		}
		key, err := r.str()
		if err != nil {
			return nil, err
		}
		r.skipSpace()
		r.pos++ // ':'
		val, err := r.value(depth)
		if err != nil {
			return nil, err
		}
		if index == nil {
			index = make(map[string]struct{})
		}
		if _, dup := index[key]; dup {
			obj.dups = append(obj.dups, key)
			continue
		}
		index[key] = struct{}{}
		obj.keys = append(obj.keys, key)
		obj.vals = append(obj.vals, val)
	}
}

func (r *jsonReader) array(depth int) (any, error) {
	r.pos++ // '['
	arr := []any{}
	for {
		r.skipSpace()
		if r.buf[r.pos] == ']' {
			r.pos++
			return arr, nil
		}
		if r.buf[r.pos] == ',' {
			r.pos++
		}
		val, err := r.value(depth)
		if err != nil {
			return nil, err
		}
		arr = append(arr, val)
	}
}

// str reads a string token. Plain strings are sliced directly; strings with
// escapes are handed to encoding/json so \uXXXX and surrogate pairs follow
// the standard exactly.
func (r *jsonReader) str() (string, error) {
	start := r.pos
	r.pos++ // opening quote
	escaped := false
	for {
		c := r.buf[r.pos]
		if c == '\\' {
			escaped = true
			r.pos += 2
			continue
		}
		r.pos++
		if c == '"' {
			break
		}
	}
	raw := r.buf[start:r.pos]
	if !escaped {
		return string(raw[1 : len(raw)-1]), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", err
	}
	return s, nil
}

// jsonTypeName names a generic value the way error details describe it.
func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "list"
	case *jsonObject:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}
