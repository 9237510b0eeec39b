package dataimport

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// toStd converts parseJSON's tree to the shapes encoding/json produces, so
// the two readers can be compared.
func toStd(v any) any {
	switch x := v.(type) {
	case *jsonObject:
		m := make(map[string]any, len(x.keys))
		for i, k := range x.keys {
			m[k] = toStd(x.vals[i])
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
		got, perr := parseJSON(b)
		if perr != nil {
			if perr.Code != CodeParseError {
				t.Fatalf("code %q", perr.Code)
			}
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted invalid JSON %q", b)
		}
		if bytes.Contains(b, []byte(`"`)) && hasDupKeys(got) {
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
	case *jsonObject:
		if len(x.dups) > 0 {
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
	if _, err := parseJSON([]byte(ok)); err != nil {
		t.Errorf("64 levels refused: %v", err)
	}
	tooDeep := strings.Repeat("[", 65) + strings.Repeat("]", 65)
	if _, err := parseJSON([]byte(tooDeep)); err == nil || !strings.Contains(err.Detail, "nesting") {
		t.Errorf("65 levels: %v", err)
	}
}
