// Package dataimporttest builds hostile request bodies for tests and
// benchmarks: for any request type DecodeStrict binds, the most expensive
// bodies of each kind that fit in a byte budget (MAX_BODY_BYTES). They are
// generated from the Go type by reflection, so a new field or array is
// covered without touching this package.
package dataimporttest

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Body is one hostile request body, built when asked for: a list of them
// would otherwise hold hundreds of megabytes.
type Body struct {
	Name string
	Make func() []byte
}

// leafMode is how every scalar of a generated body is written.
type leafMode int

const (
	valid     leafMode = iota // small, well-formed values: everything is bound and validated
	long                      // strings of 255 two-byte characters, decimals of 38 digits
	blank                     // empty strings: binds, then fails the rules
	wrongType                 // every scalar the wrong JSON type: fails binding
	escaped                   // strings of 255 \u escapes
)

var modeNames = map[leafMode]string{valid: "valid", long: "long-strings", blank: "blank-strings", wrongType: "wrong-types", escaped: "escaped-strings"}

const stringLen = 255 // the default maximum length of a string field

var (
	longString    = `"` + strings.Repeat("é", stringLen) + `"`
	escapedString = `"` + strings.Repeat(`\u00e9`, stringLen) + `"`
)

// WorstBodies returns the hostile bodies for request type t within limit
// bytes:
//
//   - for every innermost array, a body built around it (its enclosing
//     arrays first) with every array at its maximum, in each leaf mode
//     (valid, long strings, blank strings, wrong types, escaped strings);
//   - for every array, the array itself filled to the limit with empty items
//     ({"customers":[{},{},…]});
//   - unknown keys, duplicate keys (plain and escaped), deep nesting, and a
//     top-level array, each to the limit.
func WorstBodies(t reflect.Type, limit int) []Body {
	var out []Body
	paths := arrayPaths(t, nil)
	for _, p := range paths {
		name := strings.Join(p, ".")
		modes := []leafMode{valid, long, blank, wrongType, escaped}
		if hasNested(paths, name) {
			modes = nil // a body built around a nested array fills this one too
		}
		for _, m := range modes {
			out = append(out, Body{Name: modeNames[m] + ":" + name, Make: func() []byte {
				g := &gen{limit: limit, mode: m, buf: make([]byte, 0, limit)}
				g.object(t, p, false)
				return g.buf
			}})
		}
		out = append(out, Body{Name: "empty-items:" + name, Make: func() []byte {
			g := &gen{limit: limit, mode: valid, buf: make([]byte, 0, limit)}
			g.object(t, p, true)
			return g.buf
		}})
	}
	return append(out, misc(t, limit)...)
}

func hasNested(paths [][]string, name string) bool {
	for _, p := range paths {
		if strings.HasPrefix(strings.Join(p, "."), name+".") {
			return true
		}
	}
	return false
}

// arrayPaths lists the field-name paths of every array reachable from t.
func arrayPaths(t reflect.Type, prefix []string) [][]string {
	var out [][]string
	for _, f := range fields(t) {
		ft := deref(f.Type)
		p := append(append([]string(nil), prefix...), f.Name)
		if ft.Kind() == reflect.Slice {
			out = append(out, p)
			ft = deref(ft.Elem())
		}
		if ft.Kind() == reflect.Struct && !dataimport.IsScalarType(ft) {
			out = append(out, arrayPaths(ft, p)...)
		}
	}
	return out
}

var fieldCache sync.Map // reflect.Type -> []dataimport.BodyField

// fields is t's fields; callers must not modify the slice.
func fields(t reflect.Type) []dataimport.BodyField {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]dataimport.BodyField)
	}
	fs, err := dataimport.BodyFields(t)
	if err != nil {
		panic(err) // a request type the decoder refuses: its own tests say why
	}
	fieldCache.Store(t, fs)
	return fs
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// gen writes one body, never past limit: every container it opens is closed
// in the room it reserved, so a body cut short is still valid JSON.
type gen struct {
	buf     []byte
	limit   int
	reserve int // bytes needed to close what is open
	mode    leafMode
}

func (g *gen) room(n int) bool { return len(g.buf)+n+g.reserve <= g.limit }

func (g *gen) open(c byte) {
	g.buf = append(g.buf, c)
	g.reserve++
}

func (g *gen) close(c byte) {
	g.buf = append(g.buf, c)
	g.reserve--
}

// object writes a struct value with its fields in declaration order, except
// that the next field of focus comes first so the budget goes to it. With
// overflow, the array at the end of focus ignores its maximum and is filled
// with empty items to the limit.
func (g *gen) object(t reflect.Type, focus []string, overflow bool) {
	g.open('{')
	fs := fields(t)
	if len(focus) > 0 {
		for i, f := range fs {
			if f.Name == focus[0] {
				fs = append([]dataimport.BodyField{f}, append(fs[:i:i], fs[i+1:]...)...) // a new slice
				break
			}
		}
	}
	n := 0
	for _, f := range fs {
		var sub []string
		if len(focus) > 0 && f.Name == focus[0] {
			sub = focus[1:]
		}
		ft := deref(f.Type)
		key := strconv.Quote(f.Name) + ":"
		if !g.room(len(key) + 1 + g.minLen(ft)) {
			break
		}
		if n > 0 {
			g.buf = append(g.buf, ',')
		}
		n++
		g.buf = append(g.buf, key...)
		g.value(ft, f.MaxItems, sub, overflow && len(focus) > 0 && f.Name == focus[0])
	}
	g.close('}')
}

func (g *gen) value(t reflect.Type, maxItems int, focus []string, overflow bool) {
	switch {
	case t.Kind() == reflect.Slice:
		g.array(t, maxItems, focus, overflow)
	case t.Kind() == reflect.Struct && !dataimport.IsScalarType(t):
		g.object(t, focus, overflow)
	default:
		g.buf = append(g.buf, g.leaf(t)...)
	}
}

func (g *gen) array(t reflect.Type, maxItems int, focus []string, overflow bool) {
	elem := deref(t.Elem())
	g.open('[')
	emptyItems := overflow && len(focus) == 0
	item := "{}"
	if elem.Kind() != reflect.Struct || dataimport.IsScalarType(elem) {
		item = "0"
	}
	for i := 0; emptyItems || i < maxItems; i++ {
		size := g.minLen(elem)
		if emptyItems {
			size = len(item)
		}
		if !g.room(size + 1) {
			break
		}
		if i > 0 {
			g.buf = append(g.buf, ',')
		}
		if emptyItems {
			g.buf = append(g.buf, item...)
			continue
		}
		g.value(elem, 0, focus, overflow)
	}
	g.close(']')
}

// minLen is the fewest bytes a value of t takes.
func (g *gen) minLen(t reflect.Type) int {
	if t.Kind() == reflect.Slice || (t.Kind() == reflect.Struct && !dataimport.IsScalarType(t)) {
		return 2
	}
	return len(g.leaf(t))
}

var (
	dateType     = reflect.TypeFor[dataimport.Date]()
	dateTimeType = reflect.TypeFor[dataimport.DateTime]()
)

func (g *gen) leaf(t reflect.Type) string {
	if g.mode == wrongType {
		if t.Kind() == reflect.String || t == dateType || t == dateTimeType {
			return "0"
		}
		return `"x"`
	}
	switch {
	case t == dateType:
		return `"2024-01-01"`
	case t == dateTimeType:
		return `"2024-01-01T00:00:00Z"`
	case dataimport.IsScalarType(t): // decimals and money
		if g.mode == long {
			return "123456789012345678.12345678901234567890"
		}
		return "1"
	case t.Kind() == reflect.Bool:
		return "true"
	case t.Kind() == reflect.String:
		switch g.mode {
		case long:
			return longString
		case blank:
			return `""`
		case escaped:
			return escapedString
		}
		return `"x"`
	}
	return "1" // integers
}

// misc is the bodies that do not follow the type: unknown and duplicate
// keys, deep nesting, a top-level array.
func misc(t reflect.Type, limit int) []Body {
	fs := fields(t)
	firstArray, firstString := fs[0].Name, fs[0].Name
	for i := len(fs) - 1; i >= 0; i-- {
		if fs[i].Type.Kind() == reflect.Slice {
			firstArray = fs[i].Name
		}
		if fs[i].Type.Kind() == reflect.String {
			firstString = fs[i].Name
		}
	}
	escapedKey := fmt.Sprintf(`\u%04x`, firstString[0]) + firstString[1:]
	deep := strings.Repeat("[", 62) + strings.Repeat("]", 62) // 64 levels inside {"key":[…]}
	body := func(name, head, tail string, item func(i int) string) Body {
		return Body{Name: name, Make: func() []byte { return repeat(limit, head, tail, item) }}
	}
	return []Body{
		body("unknown-keys", "{", "}", func(i int) string { return fmt.Sprintf(`"u%d":0`, i) }),
		body("escaped-unknown-keys", "{", "}", func(i int) string { return fmt.Sprintf(`"\u0075%d":0`, i) }),
		body("duplicate-keys", "{", "}", func(int) string { return `"` + firstString + `":"x"` }),
		body("escaped-duplicate-keys", "{", "}", func(int) string { return `"` + escapedKey + `":"x"` }),
		body("deep-nesting:"+firstArray, `{"`+firstArray+`":[`, "]}", func(int) string { return deep }),
		body("deep-nesting:unknown-keys", "{", "}", func(i int) string { return fmt.Sprintf(`"u%d":[%s]`, i, deep) }),
		body("top-level-array", "[", "]", func(int) string { return "{}" }),
	}
}

// repeat writes head, items separated by commas while they fit, and tail.
func repeat(limit int, head, tail string, item func(i int) string) []byte {
	b := append(make([]byte, 0, limit), head...)
	for i := 0; ; i++ {
		s := item(i)
		if len(b)+len(s)+1+len(tail) > limit {
			break
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, s...)
	}
	return append(b, tail...)
}
