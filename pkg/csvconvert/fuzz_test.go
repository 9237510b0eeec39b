package csvconvert

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// fuzzMapping is short on purpose: the fuzzer minimises every input that
// finds new code, at a cost that grows with the input's length.
const fuzzMapping = `csv: {delimiter: ";"}
formats: {date: [DD.MM.YYYY], decimal_separator: ",", thousands_separator: ".", absent: [0]}
files:
- {entity: a, key: N, constants: {sales_channel: DIRECT}, columns: {N: [external_account_number, "references[0].value"], B: transfer_balance, D: date_of_sale}}
- {entity: s, path: supply_addresses, account_key: N, key: P, group_by: P, columns: {A: supply_address1}}
- {entity: m, path: "supply_addresses[].meter_points", account_key: N, parent_key: P, columns: {M: mpxn, F: {path: fuel, map: {E: GAS}}}}
`

// FuzzConvert feeds arbitrary mappings and CSV files through Load and
// Convert. Properties: no panic; every reported row has a file, a line and
// a reason; every account
// written is one JSON object on one line that the API's strict binder reads
// without an unknown field or a value of the wrong type; and every account
// of the accounts file is either written or counted as left out.
func FuzzConvert(f *testing.F) {
	f.Add(fuzzMapping, "N;B;D\n1;1.234,5;01.02.2020\n2;5-;0\n", "N;P;A\n1;x;R\n1;x;R\n2;y;S\n", "N;P;M;F\n1;x;M;E\n2;z;M;E\n")
	f.Add(fuzzMapping, "N;B;D\n2;x;1\n1;;\n1;\"a\nb\";\n", "N;P;A\n;P;\n", "N;P;M;F\n\"\n")
	f.Fuzz(func(t *testing.T, mapping, a, b, c string) {
		m, err := Load([]byte(mapping))
		if err != nil {
			return
		}
		files := []string{a, b, c}
		var inputs []Input
		for i, e := range m.Entities() {
			inputs = append(inputs, Input{Entity: e.Entity, Name: e.Entity + ".csv", R: strings.NewReader(files[i%3])})
		}
		written, reported := 0, 0
		st, err := m.Convert(t.Context(), inputs, func(acc Account) error {
			written++
			checkAccount(t, acc)
			return nil
		}, func(e RowError) {
			reported++
			if e.File == "" || e.Line < 1 || e.Reason == "" || e.Column < 0 {
				t.Fatalf("incomplete row error %+v", e)
			}
		})
		if ue := (*UnsortedError)(nil); errors.As(err, &ue) && written > 0 {
			t.Fatalf("%d accounts written from unsorted files: %v", written, err)
		}
		if err != nil {
			return // a file the run cannot use (header, columns, order): no output promised
		}
		if written != st.Converted || reported != st.Errors || st.Converted+st.Failed != st.Accounts {
			t.Fatalf("stats %+v, written %d, reported %d", st, written, reported)
		}
	})
}

func checkAccount(t *testing.T, acc Account) {
	t.Helper()
	if !json.Valid(acc.JSON) || !bytes.HasPrefix(acc.JSON, []byte("{")) || bytes.ContainsAny(acc.JSON, "\r\n") {
		t.Fatalf("account %q is not one JSON object on one line: %q", acc.Key, acc.JSON)
	}
	var a dataimport.Account
	fes, err := dataimport.DecodeStrict(acc.JSON, &a)
	if err != nil {
		var de *dataimport.Error
		if !errors.As(err, &de) {
			t.Fatalf("account %q: %v", acc.Key, err)
		}
		fes = de.Errors
	}
	for _, fe := range fes {
		switch fe.Code {
		case dataimport.CodeUnknownField, dataimport.CodeInvalid, dataimport.CodeNull, dataimport.CodeNullCharactersNotAllowed,
			dataimport.CodeInvalidDate, dataimport.CodeInvalidDatetime, dataimport.CodeParseError:
			t.Fatalf("account %q: the converter wrote a field the binder refuses: %+v\n%s", acc.Key, fe, acc.JSON)
		}
	}
}
