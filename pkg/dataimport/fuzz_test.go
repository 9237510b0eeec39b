package dataimport

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// FuzzDecodeValidateAccount drives the whole account path with arbitrary
// bodies. Properties: it never panics; every rejection is either a
// parse_error or account_failed_validation whose errors all carry a code, an
// attr and a detail; and an accepted account, written back out, is accepted
// again unchanged (normalisation is idempotent, so stage and the worker can
// re-validate what validate returned).
func FuzzDecodeValidateAccount(f *testing.F) {
	f.Add(validAccountJSON(f))
	f.Fuzz(func(t *testing.T, body []byte) {
		// The validators must also survive whatever the binder left behind
		// on a body it rejected.
		var partial Account
		if _, err := DecodeStrict(body, &partial); err == nil {
			for _, e := range ValidateAccount(&partial, testRules) {
				checkFieldError(t, e)
			}
		}

		a, err := DecodeAccount(body, testRules)
		if err != nil {
			checkRejection(t, err, CodeAccountFailedValidation)
			return
		}
		out, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("marshal accepted account: %v", err)
		}
		again, err := DecodeAccount(out, testRules)
		if err != nil {
			t.Fatalf("normalised account rejected: %v\n%s", err, out)
		}
		out2, _ := json.Marshal(again)
		if !bytes.Equal(out, out2) {
			t.Fatalf("normalisation not idempotent:\n%s\n%s", out, out2)
		}
	})
}

func checkFieldError(t *testing.T, e FieldError) {
	t.Helper()
	if e.Code == "" || e.Attr == "" || e.Detail == "" {
		t.Fatalf("incomplete field error %+v", e)
	}
}

// FuzzAccountField puts one fuzzed value at one of the sample account's
// paths, which reaches the validators far more often than byte mutations of
// a whole body do. Same properties as FuzzDecodeValidateAccount.
func FuzzAccountField(f *testing.F) {
	base := validAccountJSON(f)
	var paths []string
	collectPaths(generic(f, base), "", &paths)
	slices.Sort(paths) // map order is random; inputs must replay
	for i, v := range []string{`"07400 123456"`, `1.005`, `"2024-02-29"`, `null`, `{"x":1}`, `"+1 202 555 0143"`, `1e2`, `"0000-01-01T00:00:00+01:00"`, `" The Occupier "`} {
		f.Add(uint16(i*7), []byte(v), true)
		f.Add(uint16(i*13), []byte(v), false)
	}
	f.Fuzz(func(t *testing.T, which uint16, value []byte, raw bool) {
		m := generic(t, base)
		var v any = string(value)
		if raw && json.Valid(value) {
			v = json.RawMessage(value)
		}
		set(t, m, paths[int(which)%len(paths)], v)
		body, err := json.Marshal(m)
		if err != nil {
			return
		}
		a, err := DecodeAccount(body, testRules)
		if err != nil {
			e, ok := AsError(err)
			if !ok || (e.Code != CodeAccountFailedValidation && e.Code != CodeParseError) {
				t.Fatalf("unexpected %v", err)
			}
			for _, fe := range e.Errors {
				checkFieldError(t, fe)
			}
			return
		}
		out, _ := json.Marshal(a)
		again, err := DecodeAccount(out, testRules)
		if err != nil {
			t.Fatalf("normalised account rejected: %v\n%s", err, out)
		}
		if out2, _ := json.Marshal(again); !bytes.Equal(out, out2) {
			t.Fatalf("normalisation not idempotent:\n%s\n%s", out, out2)
		}
	})
}

func collectPaths(v any, path string, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			collectPaths(e, joinPath(path, k), out)
		}
	case []any:
		for i, e := range x {
			collectPaths(e, indexPath(path, i), out)
		}
	default:
		*out = append(*out, path)
		return
	}
	if path != "" {
		*out = append(*out, path)
	}
}
