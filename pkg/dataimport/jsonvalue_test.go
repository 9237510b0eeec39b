package dataimport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// treeObject keeps the first value of each key, like the binder does.
type treeObject struct {
	vals map[string]any
	dups bool
}

// parseTree reads a whole body with the reader into generic values, so the
// reader can be compared with encoding/json.
func parseTree(b []byte) (any, *Error) {
	arrays, perr := checkJSON(b, nil)
	if perr != nil {
		return nil, perr
	}
	r := jsonReader{buf: b, arrays: arrays}
	if len(b)%2 == 0 { // half the bodies count by scanning, as arrays past maxCountedArrays do
		r.arrays = nil
	}
	v, err := readTree(&r)
	if err != nil {
		return nil, parseError(err.Error())
	}
	return v, nil
}

func readTree(r *jsonReader) (any, error) {
	switch r.peek() {
	case '{':
		obj := &treeObject{vals: map[string]any{}}
		for {
			key, more, err := r.nextKey(true)
			if err != nil || !more {
				return obj, err
			}
			v, err := readTree(r)
			if err != nil {
				return nil, err
			}
			if _, dup := obj.vals[string(key)]; dup {
				obj.dups = true
				continue
			}
			obj.vals[string(key)] = v
		}
	case '[':
		n := r.countElems(math.MaxInt)
		arr := []any{}
		for r.nextElem() {
			v, err := readTree(r)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		if n != len(arr) {
			return nil, fmt.Errorf("countElems said %d, the array has %d", n, len(arr))
		}
		return arr, nil
	case '"':
		return r.str()
	case 't', 'f':
		return r.literal()[0] == 't', nil
	case 'n':
		r.literal()
		return nil, nil
	}
	return json.Number(r.literal()), nil
}

// toStd converts readTree's values to the shapes encoding/json produces.
func toStd(v any) any {
	switch x := v.(type) {
	case *treeObject:
		m := make(map[string]any, len(x.vals))
		for k, e := range x.vals {
			m[k] = toStd(e)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toStd(e)
		}
		return out
	}
	return v
}

func stdParse(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

func FuzzJSONReader(f *testing.F) {
	for _, s := range []string{
		`{"a":"b\"c\\d\u00e9\ud83d\ude00","b":[1,-2.5e+3,0,true,false,null],"c":{}}`,
		` [ ] `, `"\/\b\f\n\r\t"`, `-0.0E-0`, `{"":{"":[]}}`, `"\ud800"`, "\"\u2028\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, perr := parseTree(b)
		if perr != nil {
			if perr.Code != CodeParseError {
				t.Fatalf("code %q", perr.Code)
			}
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted invalid JSON %q", b)
		}
		// skip must land exactly where reading the value ends.
		r := jsonReader{buf: b}
		r.skip()
		r.skipSpace()
		if r.pos != len(b) {
			t.Fatalf("skip stopped at %d of %d in %q", r.pos, len(b), b)
		}
		if hasDupKeys(got) {
			return // encoding/json keeps the last duplicate, we keep the first
		}
		want, err := stdParse(b)
		if err != nil {
			t.Fatalf("encoding/json refused what we accepted: %v", err)
		}
		if !reflect.DeepEqual(toStd(got), want) {
			t.Fatalf("tree differs:\n got  %#v\n want %#v", toStd(got), want)
		}
	})
}

func hasDupKeys(v any) bool {
	switch x := v.(type) {
	case *treeObject:
		if x.dups {
			return true
		}
		for _, e := range x.vals {
			if hasDupKeys(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasDupKeys(e) {
				return true
			}
		}
	}
	return false
}

func TestJSONReaderDepth(t *testing.T) {
	ok := strings.Repeat("[", 64) + strings.Repeat("]", 64)
	if _, err := parseTree([]byte(ok)); err != nil {
		t.Errorf("64 levels refused: %v", err)
	}
	for _, tooDeep := range []string{
		strings.Repeat("[", 65) + strings.Repeat("]", 65),
		`{"a":"[[[[","b":` + strings.Repeat(`{"c":`, 65) + "1" + strings.Repeat("}", 65) + "}",
	} {
		if _, err := parseTree([]byte(tooDeep)); err == nil || !strings.Contains(err.Detail, "nesting") {
			t.Errorf("65 levels: %v", err)
		}
	}
	// Brackets inside strings are text, not nesting.
	inString := `["` + strings.Repeat("[", 100) + `\"` + strings.Repeat("{", 100) + `"]`
	if _, err := parseTree([]byte(inString)); err != nil {
		t.Errorf("brackets in a string counted as nesting: %v", err)
	}
}

// FuzzCheckJSON holds checkJSON's own syntax check to encoding/json's: the
// same bodies accepted, the same message for those refused (the code it
// replaced asked json.Valid), and each array's element count as
// encoding/json's tokens give it.
func FuzzCheckJSON(f *testing.F) {
	for _, name := range []string{"testdata/account_valid.json", "testdata/account_bulk.json"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{`[]`, ` [ ] `, `[1,[2,3],{}]`, `{"a":[1,2,]}`, `{"a":[1,2],}`, `{"a" 1}`, `{"a":}`, `{,}`, `[,1]`,
		`"\u00zz"`, `"\u00e9\n\/"`, `"\x"`, "\"\x01\"", `01`, `-`, `-0`, `1.`, `.5`, `1e`, `1e+`, `1E-7`, `+1`, `tru`, `true false`,
		`nul`, `null`, `{"a":1}x`, `"`, `[`, `{`, `{"a"`, `{"a":1`, strings.Repeat("[", 64) + strings.Repeat("]", 64),
		strings.Repeat("[", 65) + strings.Repeat("]", 65), strings.Repeat("[", 65) + "}", strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		counts, perr := checkJSON(b, nil)
		old := oldCheckJSON(b)
		switch {
		case (perr == nil) != (old == nil):
			t.Fatalf("%q: checkJSON %v, encoding/json %v", b, perr, old)
		case perr != nil && perr.Detail != old.Detail:
			t.Fatalf("%q: checkJSON %q, encoding/json %q", b, perr.Detail, old.Detail)
		case perr != nil:
			return
		}
		if want := tokenCounts(t, b); !slices.Equal(counts, want) {
			t.Fatalf("%q: counts %v, encoding/json's tokens %v", b, counts, want)
		}
	})
}

// tokenCounts is each array's offset and element count, in document
// order (the first maxCountedArrays), from encoding/json's tokens.
func tokenCounts(t *testing.T, b []byte) []arrayLen {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	type level struct {
		k   int  // index in out of an array, else -1
		key bool // an object whose next token is a key
	}
	var stack []level
	var out []arrayLen
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("%q: encoding/json's tokens: %v", b, err)
		}
		if d, ok := tok.(json.Delim); ok && (d == ']' || d == '}') {
			stack = stack[:len(stack)-1]
			continue
		}
		if n := len(stack); n > 0 {
			top := &stack[n-1]
			if top.key { // a key, not a value
				top.key = false
				continue
			}
			if top.k >= 0 {
				out[top.k].n++
			} else if top.k == -1 {
				top.key = true // an object's value: a key comes next
			}
		}
		switch tok {
		case json.Delim('['):
			k := -2 // an array past the counted ones
			if len(out) < maxCountedArrays {
				k = len(out)
				out = append(out, arrayLen{off: int(dec.InputOffset()) - 1})
			}
			stack = append(stack, level{k: k})
		case json.Delim('{'):
			stack = append(stack, level{k: -1, key: true})
		}
	}
}
