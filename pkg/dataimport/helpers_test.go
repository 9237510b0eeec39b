package dataimport

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

var testRules = AccountRules{PhoneRegion: "GB", Today: Date{2025, 6, 15}}

func validAccountJSON(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/account_valid.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// generic decodes JSON into maps/slices with json.Number, for mutation.
func generic(t testing.TB, b []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func encode(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// walk returns the container holding the last segment of path.
func walk(t testing.TB, root any, path string) (any, string) {
	t.Helper()
	segs := strings.Split(path, ".")
	cur := root
	for _, s := range segs[:len(segs)-1] {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[s]
		case []any:
			i, _ := strconv.Atoi(s)
			cur = c[i]
		default:
			t.Fatalf("cannot walk %q at %q", path, s)
		}
	}
	return cur, segs[len(segs)-1]
}

// set sets path (dot path, numeric = index) to v; appending at len works.
func set(t testing.TB, root map[string]any, path string, v any) {
	t.Helper()
	parent, last := walk(t, root, path)
	switch c := parent.(type) {
	case map[string]any:
		c[last] = v
	case []any:
		i, _ := strconv.Atoi(last)
		c[i] = v
	default:
		t.Fatalf("cannot set %q", path)
	}
}

func del(t testing.TB, root map[string]any, path string) {
	t.Helper()
	parent, last := walk(t, root, path)
	m, ok := parent.(map[string]any)
	if !ok {
		t.Fatalf("cannot delete %q", path)
	}
	delete(m, last)
}

func get(t testing.TB, root map[string]any, path string) any {
	t.Helper()
	parent, last := walk(t, root, path)
	switch c := parent.(type) {
	case map[string]any:
		return c[last]
	case []any:
		i, _ := strconv.Atoi(last)
		return c[i]
	}
	t.Fatalf("cannot get %q", path)
	return nil
}

// fe is a compact "code@attr" form for comparing error sets.
func fe(errs []FieldError) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Code+"@"+e.Attr)
	}
	slices.Sort(out)
	return out
}

func wantErrs(t *testing.T, got []FieldError, want ...string) {
	t.Helper()
	slices.Sort(want)
	if g := fe(got); !slices.Equal(g, want) {
		t.Errorf("errors:\n got  %v\n want %v\n full %s", g, want, dump(got))
	}
}

func dump(errs []FieldError) string {
	var b strings.Builder
	for _, e := range errs {
		fmt.Fprintf(&b, "\n   %s %s: %s", e.Attr, e.Code, e.Detail)
	}
	return b.String()
}

// accountErrors runs the full decode+validate path and returns field errors
// (failing the test on a parse error).
func accountErrors(t *testing.T, body []byte) (*Account, []FieldError) {
	t.Helper()
	a, err := DecodeAccount(body, testRules)
	if err == nil {
		return a, nil
	}
	e, ok := AsError(err)
	if !ok || e.Code != CodeAccountFailedValidation {
		t.Fatalf("unexpected error %v", err)
	}
	return nil, e.Errors
}

// jsonNum makes a JSON number literal (not a string) in a mutation.
func jsonNum(s string) json.Number { return json.Number(s) }

func ptrDec(t testing.TB, s string) *decimal.Decimal {
	t.Helper()
	d, err := decimal.NewFromString(s)
	if err != nil {
		t.Fatal(err)
	}
	return &d
}

func mustMoney(t testing.TB, s string) Money {
	t.Helper()
	m, err := MoneyFromString(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
