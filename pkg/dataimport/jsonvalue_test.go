package dataimport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
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
