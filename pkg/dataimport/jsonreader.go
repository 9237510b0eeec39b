package dataimport

import (
	"bytes"
	"encoding/json"
)

// stringEnd returns the position just after the string token starting at
// b[start] (its opening quote).
func stringEnd(b []byte, start int) int {
	for i := start + 1; ; i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
}

// jsonReader walks a body that checkJSON accepted, token by token, so the
// binder can fill Go values straight from the bytes and skip what it does
// not want (unknown keys, items beyond an array's maximum) without building
// anything. Because the syntax is already known to be valid, the reader
// does no error checking of its own.
type jsonReader struct {
	buf []byte
	pos int
	// arrays are the element counts checkJSON found, in document
	// order; next is the first one the reader has not passed.
	arrays []arrayLen
	next   int
	// text is one string copy of buf, made on the first string read:
	// strings without escapes are slices of it, so a body's strings cost
	// one allocation instead of one each. The bound values keep the copy
	// alive as long as they live, at most the size of the body.
	text string
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

// peek returns the first byte of the next value: '{', '[', '"', 't', 'f',
// 'n', or the start of a number.
func (r *jsonReader) peek() byte {
	r.skipSpace()
	return r.buf[r.pos]
}

// kind names the next value the way error details describe it.
func (r *jsonReader) kind() string {
	switch r.peek() {
	case '{':
		return "object"
	case '[':
		return "list"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// nextKey moves into or through an object (call it with the reader on '{'
// for the first key) and returns the next key, or ok=false after the
// closing '}'. The key's bytes alias the body when it has no escapes, so
// looking a known key up allocates nothing; with decode false the key is
// not even unescaped (the caller will skip its value).
func (r *jsonReader) nextKey(decode bool) (key []byte, ok bool, err error) {
	r.skipSpace()
	switch r.buf[r.pos] {
	case '{', ',':
		r.pos++
		r.skipSpace()
	}
	if r.buf[r.pos] == '}' {
		r.pos++
		return nil, false, nil
	}
	if decode {
		key, err = r.strBytes()
		if err != nil {
			return nil, false, err
		}
	} else {
		r.pos = stringEnd(r.buf, r.pos)
	}
	r.skipSpace()
	r.pos++ // ':'
	return key, true, nil
}

// nextElem moves into or through an array (call it with the reader on '['
// for the first element) and reports whether an element follows.
func (r *jsonReader) nextElem() bool {
	r.skipSpace()
	switch r.buf[r.pos] {
	case '[', ',':
		r.pos++
		r.skipSpace()
	}
	if r.buf[r.pos] == ']' {
		r.pos++
		return false
	}
	return true
}

// countElems counts the elements of the array the reader is on, stopping
// at limit, without moving the reader: the binder sizes a slice exactly
// instead of growing it by doubling.
func (r *jsonReader) countElems(limit int) int {
	for r.next < len(r.arrays) && r.arrays[r.next].off < r.pos {
		r.next++
	}
	if r.next < len(r.arrays) && r.arrays[r.next].off == r.pos {
		if n := r.arrays[r.next].n; n == 0 || n < limit {
			return n
		}
		return max(limit, 1) // as the scan below: a non-empty array counts at least 1
	}
	b := r.buf
	i := r.pos + 1 // past '['
	for b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r' {
		i++
	}
	if b[i] == ']' {
		return 0
	}
	n, depth := 1, 0
	for ; n < limit; i++ {
		switch b[i] {
		case '"':
			i = stringEnd(b, i) - 1
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return n
			}
			depth--
		case ',':
			if depth == 0 {
				n++
			}
		}
	}
	return n
}

// strBytes reads a string token. Plain strings alias the body; strings with
// escapes are decoded by encoding/json so \uXXXX and surrogate pairs follow
// the standard exactly.
func (r *jsonReader) strBytes() ([]byte, error) {
	start := r.pos
	end := stringEnd(r.buf, start)
	r.pos = end
	raw := r.buf[start:end]
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1], nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return []byte(s), nil
}

// str reads a string token into a string that does not alias buf.
func (r *jsonReader) str() (string, error) {
	start := r.pos
	end := stringEnd(r.buf, start)
	if bytes.IndexByte(r.buf[start:end], '\\') >= 0 {
		b, err := r.strBytes()
		return string(b), err
	}
	r.pos = end
	if r.text == "" {
		r.text = string(r.buf)
	}
	return r.text[start+1 : end-1], nil
}

// literal reads a number, true, false or null and returns its text, which
// aliases the body.
func (r *jsonReader) literal() []byte {
	r.skipSpace()
	start := r.pos
	for r.pos < len(r.buf) && isLiteralByte(r.buf[r.pos]) {
		r.pos++
	}
	return r.buf[start:r.pos]
}

func isLiteralByte(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '+' || c == '.' || c == 'E'
}

// skip moves past the next value, however large, without allocating.
func (r *jsonReader) skip() {
	switch r.peek() {
	case '"':
		r.pos = stringEnd(r.buf, r.pos)
		return
	case '{', '[':
	default:
		r.literal()
		return
	}
	depth := 0
	for {
		switch r.buf[r.pos] {
		case '"':
			r.pos = stringEnd(r.buf, r.pos)
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				r.pos++
				return
			}
		}
		r.pos++
	}
}
