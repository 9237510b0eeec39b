package csvconvert

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

const exampleDir = "../../examples/convert"

// exampleFiles reads the example export; edit lets a test break a file.
func exampleFiles(t testing.TB, edit map[string]func(string) string) (*Mapping, []Input) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(exampleDir, "mapping.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Load(src)
	if err != nil {
		t.Fatal(err)
	}
	var inputs []Input
	for _, e := range m.Entities() {
		b, err := os.ReadFile(filepath.Join(exampleDir, e.File))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if f := edit[e.File]; f != nil {
			s = f(s)
		}
		inputs = append(inputs, Input{Entity: e.Entity, Name: e.File, R: strings.NewReader(s)})
	}
	return m, inputs
}

type result struct {
	accounts []Account
	errs     []RowError
	stats    Stats
}

func run(t testing.TB, m *Mapping, inputs []Input) result {
	t.Helper()
	var r result
	st, err := m.Convert(context.Background(), inputs, func(a Account) error {
		r.accounts = append(r.accounts, a)
		return nil
	}, func(e RowError) { r.errs = append(r.errs, e) })
	if err != nil {
		t.Fatal(err)
	}
	r.stats = st
	return r
}

func (r result) keys() []string {
	var out []string
	for _, a := range r.accounts {
		out = append(out, a.Key)
	}
	return out
}

func (r result) account(t *testing.T, key string) map[string]any {
	t.Helper()
	for _, a := range r.accounts {
		if a.Key == key {
			var m map[string]any
			if err := json.Unmarshal(a.JSON, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("account %s not converted; got %v", key, r.keys())
	return nil
}

var gbRules = dataimport.AccountRules{PhoneRegion: "GB", Today: dataimport.DateOf(time.Now().UTC())}

// The example export converts whole, and every account passes the API's
// own validation.
func TestExampleConvertsToValidAccounts(t *testing.T) {
	m, inputs := exampleFiles(t, nil)
	r := run(t, m, inputs)
	if len(r.errs) > 0 {
		t.Fatalf("errors: %v", r.errs)
	}
	if got := strings.Join(r.keys(), ","); got != "100017,100023,100031,100048,100052" {
		t.Fatalf("accounts %s, want the accounts file's order", got)
	}
	if r.stats != (Stats{Rows: 43, Accounts: 5, Converted: 5}) {
		t.Fatalf("stats %+v", r.stats)
	}
	for _, a := range r.accounts {
		if bytes.ContainsRune(a.JSON, '\n') {
			t.Fatalf("account %s spans lines", a.Key)
		}
		if _, err := dataimport.DecodeAccount(a.JSON, gbRules); err != nil {
			t.Errorf("account %s (line %d) does not validate: %v\n%s", a.Key, a.Line, err, a.JSON)
		}
	}

	// What each rule of the mapping did, on the accounts that exercise it.
	brennan := r.account(t, "100023")
	mustJSON(t, brennan["transfer_balance"], `-12.50`)                 // "12,50-": trailing minus, decimal comma
	mustJSON(t, brennan["communication_preference"], `"PRINT"`)        // value map
	mustJSON(t, brennan["sales_channel"], `"PRICE_COMPARISON"`)        // value map
	mustJSON(t, brennan["billing_address1"], `"Flat 3, Harbour View"`) // quoted cell
	mustJSON(t, brennan["references"], `[{"namespace":"legacy_billing","value":"100023"}]`)
	sa := brennan["supply_addresses"].([]any)[0].(map[string]any)
	// Two register rows of one MPXN: one meter point (group_by), with both
	// agreements; the open-ended one has no valid_to (31.12.9999 is absent).
	mustJSON(t, sa["meter_points"], `[{"agreements":[{"product_code":"E7-FIX-24M","valid_from":"2022-11-17","valid_to":"2024-11-16"},`+
		`{"product_code":"E7-VAR","valid_from":"2024-11-17"}],"fuel":"ELECTRICITY","mpxn":"1200023456790","supply_start_date":"2022-11-17"}]`)
	// 12.03.2024 10:15 London (GMT) is 10:15Z.
	mustJSON(t, brennan["notes"], `[{"body":"Customer asked for paper bills again after the 2023 switch.","created_at":"2024-03-12T10:15:00Z","is_pinned":false}]`)
	if len(brennan["customers"].([]any)) != 2 {
		t.Fatalf("customers: %v", brennan["customers"])
	}

	bakery := r.account(t, "100031")
	mustJSON(t, bakery["transfer_balance"], `1234.56`) // "1.234,56"
	mustJSON(t, bakery["account_type"], `"BUSINESS"`)
	// 01.07.2023 09:00 London (BST) is 08:00Z.
	mustJSON(t, bakery["notes"].([]any)[0].(map[string]any)["created_at"], `"2023-07-01T08:00:00Z"`)
	if n := len(bakery["supply_addresses"].([]any)); n != 2 {
		t.Fatalf("bakery has %d supply addresses, want 2", n)
	}
	if _, ok := bakery["customers"].([]any)[0].(map[string]any)["date_of_birth"]; ok {
		t.Fatal("00.00.0000 should leave date_of_birth absent")
	}

	okafor := r.account(t, "100017")
	for _, absent := range []string{"last_statement_closing_date", "billing_address2", "sales_subchannel", "notes"} {
		if _, ok := okafor[absent]; ok {
			t.Errorf("100017: %s should be absent (empty cell, 00.00.0000, or no rows)", absent)
		}
	}
	nowak := r.account(t, "100048")
	if _, ok := nowak["metadata"]; ok {
		t.Error("100048: an empty TARIFF_GROUP must not leave metadata with only the constant key")
	}
	mustJSON(t, nowak["customers"].([]any)[0].(map[string]any)["customer_preferences"],
		`{"is_user_psr_consent_obtained":true,"opted_into_offers":false,"opted_into_sms":false}`) // "J" is true
}

func mustJSON(t *testing.T, v any, want string) {
	t.Helper()
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %s: %v", want, err)
	}
	wb, _ := json.Marshal(w)
	if string(got) != string(wb) {
		t.Errorf("got  %s\nwant %s", got, wb)
	}
}

func replaceLine(n int, with string) func(string) string {
	return func(s string) string {
		lines := strings.Split(s, "\n")
		lines[n-1] = with
		return strings.Join(lines, "\n")
	}
}

// Each malformed row is reported with its file, line, column and field;
// its account is left out and every other account still converts.
func TestMalformedRowsReported(t *testing.T) {
	m, inputs := exampleFiles(t, map[string]func(string) string{
		// 100017: a bad decimal on the account row itself.
		"accounts.csv": replaceLine(2, "100017;P;Mrs J Okafor;14 Mill Lane;;Leeds;LS6 2AB;j.okafor@example.co.uk;Y;D;;03.05.2021;00.00.0000;12.5,40;STANDARD;NE"),
		// 100023: an impossible date of birth of the second customer.
		"customers.csv": replaceLine(4, "100023;2;Mrs;Aoife;Brennan;aoife.brennan@example.co.uk;07400 123789;;31.02.1987;N;N;N"),
		// 100031: a meter row without its account key (not joinable; both
		// its neighbours are 100031's), and a premise for an account that
		// does not exist (an orphan).
		"meters.csv": replaceLine(7, ";P-5003;7788990022;G;1;01.02.2020;00.00.0000"),
		"premises.csv": func(s string) string {
			return replaceLine(5, "100031;P-5004;Unit 4, Foss Industrial Estate;;York;YO31 7UZ;01.06.2023\n100040;P-9999;1 Nowhere Road;;Hull;HU1 1AA;01.01.2024")(s)
		},
		// 100052: an agreement of a meter the account does not have.
		"agreements.csv": replaceLine(13, "100052;7788990099;VAR-STD;09.01.2024;31.12.9999"),
	})
	r := run(t, m, inputs)
	var got []string
	for _, e := range r.errs {
		got = append(got, e.String())
	}
	want := []string{
		`accounts.csv:2:14: column BALANCE: transfer_balance: "12.5,40" is not a decimal with separator "," and thousands separator "." (account 100017)`,
		`customers.csv:4:9: column BIRTH_DATE: customers[].date_of_birth: "31.02.1987" is not a date in format DD.MM.YYYY (account 100023)`,
		`meters.csv:7:1: column ACCOUNT_NO: missing key`,
		// The meter row could not be joined, so its agreement has no meter:
		// 100031 is left out rather than converted without a meter; and it
		// is left out for the lost row itself, which may be one of its.
		`agreements.csv:9:2: column MPXN: orphan: no meters with key "7788990022" in this account (account 100031)`,
		`meters.csv:7: left out: the row at this line joins no account (reported above) and may be one of this account's (account 100031)`,
		`premises.csv:6:1: column ACCOUNT_NO: orphan: no account "100040" in accounts.csv (both files must be sorted by the key)`,
		`agreements.csv:13:2: column MPXN: orphan: no meters with key "7788990099" in this account (account 100052)`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if k := strings.Join(r.keys(), ","); k != "100048" {
		t.Fatalf("converted %s, want 100048", k)
	}
	if r.stats.Accounts != 5 || r.stats.Failed != 4 || r.stats.Errors != 7 {
		t.Fatalf("stats %+v", r.stats)
	}
	if _, err := dataimport.DecodeAccount(r.accounts[0].JSON, gbRules); err != nil {
		t.Fatalf("100048 should still validate: %v", err)
	}
}
