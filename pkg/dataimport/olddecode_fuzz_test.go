package dataimport

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// FuzzDecodeOldVsNew holds the faster decoder and validator to the answers
// of the ones they replaced (olddecode_test.go): for the same bytes, the same
// parse error, the same field errors in the same order, and the same
// normalised account; and, on the bare binding, the same partial value. Each
// input is tried as a whole body and as one value placed at one path of a
// valid account, which reaches every field's checks (phone numbers, e-mail
// addresses, dates, decimals) far more often than byte mutations do.
func FuzzDecodeOldVsNew(f *testing.F) {
	valid := validAccountJSON(f)
	bulk, err := os.ReadFile("testdata/account_bulk.json")
	if err != nil {
		f.Fatal(err)
	}
	var paths []string
	collectPaths(generic(f, valid), "", &paths)
	slices.Sort(paths) // map order is random; inputs must replay
	bodies := [][]byte{
		valid, bulk, valid[:len(valid)/2], []byte(`[1,2]`), []byte(`"x"`), []byte(` {} `),
		[]byte(strings.Repeat("[", 70) + strings.Repeat("]", 70)),
		[]byte(`{"import_supplier":"S","import_supplier":"T","x":1,"x":2,"":3,"customers":null,"notes":[{"body":"a\u0000"}]}`),
		[]byte(`{"transfer_balance":"1e999999999999","date_of_sale":"2024-02-30","unknown_occupier":"yes","customers":[{"mobile":12}]}`),
	}
	values := []string{
		`"07400 123456"`, `"+44 7400 123456"`, `"0044 7400 123456"`, `"447400123456"`, `"020 7946 0018"`, `"(020) 7946-0018"`,
		`"+1 202 555 0143"`, `"+800 1234 5678"`, `"07400 123456 ext. 12"`, `"0"`, `"+"`, `"tel:+44-20-7946-0018"`, `"+39 06 1234 5678"`,
		`"01534 123456"`, `"+44 1481 123456"`, `"7400123456"`, `"  07400   123456 "`, `"٠٧٤٠٠١٢٣٤٥٦"`, `"0800 123 4567"`,
		`"a@b.co"`, `"Bob <bob@x.com>"`, `1.005`, `"12.50"`, `-0`, `1e2`, `"1e-30"`, `"2024-02-29"`, `"2025-06-15T10:00:00+01:00"`,
		`null`, `{"x":1}`, `[]`, `true`, `" The Occupier "`, `"\u00e9"`, `"a\u0000b"`,
	}
	for i, v := range values {
		f.Add(bodies[i%len(bodies)], uint16(i*7), []byte(v), true)
		f.Add([]byte(`{}`), uint16(i*13), []byte(v), false)
	}
	rules := []AccountRules{testRules, {PhoneRegion: "US"}, {}}
	f.Fuzz(func(t *testing.T, body []byte, which uint16, value []byte, raw bool) {
		r := rules[int(which)%len(rules)]
		compareOldNew(t, body, r)
		m := generic(t, valid)
		var v any = string(value)
		if raw && json.Valid(value) {
			v = json.RawMessage(value)
		}
		set(t, m, paths[int(which)%len(paths)], v)
		if placed, err := json.Marshal(m); err == nil {
			compareOldNew(t, placed, r)
		}
	})
}

func compareOldNew(t *testing.T, body []byte, rules AccountRules) {
	t.Helper()
	var oldPartial, newPartial Account
	var oldBound collector
	_, oldErr := oldDecodeStrict(body, &oldPartial, &oldBound)
	newErrs, newErr := DecodeStrict(body, &newPartial)
	if !reflect.DeepEqual(oldErr, newErr) || !reflect.DeepEqual(oldBound.list(), newErrs) ||
		!reflect.DeepEqual(oldPartial, newPartial) {
		t.Fatalf("binding differs on %q:\nold %v %+v\n    %s\nnew %v %+v\n    %s", body,
			oldErr, oldBound.list(), jsonOf(oldPartial), newErr, newErrs, jsonOf(newPartial))
	}
	if oldErr == nil { // the validators must agree on what the binder left too
		var c collector
		oldValidateAccount(&c, &oldPartial, rules)
		if got := ValidateAccount(&newPartial, rules); !reflect.DeepEqual(c.list(), got) ||
			!reflect.DeepEqual(oldPartial, newPartial) {
			t.Fatalf("validation of the bound value differs on %q:\nold %+v\n    %s\nnew %+v\n    %s", body,
				c.list(), jsonOf(oldPartial), got, jsonOf(newPartial))
		}
	}
	oldA, oldErr2 := oldDecodeAccount(body, rules)
	newA, newErr2 := DecodeAccount(body, rules)
	if !reflect.DeepEqual(oldErr2, newErr2) || !reflect.DeepEqual(oldA, newA) {
		t.Fatalf("answer differs on %q:\nold %v\n    %s\nnew %v\n    %s", body, oldErr2, jsonOf(oldA), newErr2, jsonOf(newA))
	}
}

func jsonOf(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(err.Error())
	}
	return bytes.TrimSpace(b)
}
