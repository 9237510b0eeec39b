package app_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// Hostile bodies are refused in the envelope, cheaply, and nothing is stored.
func TestHostileBodies(t *testing.T) {
	p := newPipeline(t)
	cases := []struct {
		name   string
		path   string
		body   any
		status int
		code   string
	}{
		{"deep nesting", validatePath, `{"customers":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`, 400, "parse_error"},
		{"deep nesting in GraphQL", "/v1/graphql/", `{"query":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, 400, "parse_error"},
		{"50 MB body with length", validatePath, strings.Repeat(" ", 50<<20), 413, "request_too_large"},
		{"50 MB body streamed", validatePath, io.MultiReader(strings.NewReader(`{"a":"`), strings.NewReader(strings.Repeat("x", 50<<20))), 413, "request_too_large"},
		{"invalid UTF-8", validatePath, strings.Replace(p.account("EXT-U"), `"Alice"`, "\"Al\xffce\"", 1), 400, ""},
		{"NUL in a string", validatePath, strings.Replace(p.account("EXT-U"), `"Alice"`, `"Al\u0000ce"`, 1), 400, "account_failed_validation"},
		{"top-level array", validatePath, `[1,2,3]`, 400, ""},
		{"empty body", validatePath, ``, 400, "parse_error"},
		{"number overflow", validatePath, strings.Replace(p.account("EXT-U"), `"transfer_balance": "-42.50"`, `"transfer_balance": 1e999999999`, 1), 400, ""},
		{"stage with trailing garbage", stagePath, p.account("EXT-U") + `{"x":1}`, 400, "parse_error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := p.As(p.token, http.MethodPost, tc.path, tc.body)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %.300s", r.Status, tc.status, r.Body)
			}
			var env map[string]any
			if err := json.Unmarshal(r.Body, &env); err != nil || env["detail"] == nil || (tc.code != "" && env["code"] != tc.code) {
				t.Fatalf("not the envelope with code %q: %.300s", tc.code, r.Body)
			}
			testutil.Tally(testutil.BadInputsTried, 1)
		})
	}
	if n := p.count(`SELECT count(*) FROM import_processes`); n != 0 {
		t.Fatalf("hostile input stored %d processes", n)
	}
}

// SQL- and script-looking strings are data: stored and returned verbatim.
func TestInjectionLookingStringsAreVerbatim(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker()
	values := map[string]string{
		`"Alice"`:           `Robert'); DROP TABLE accounts;--`,
		`"Dr A Smith"`:      `<script>alert("x")</script>`,
		`"Dr Smith"`:        `' OR '1'='1`,
		`"Westminster"`:     `${jndi:ldap://x}{{7*7}}%s%n`,
		`"comparethemeter"`: `\u202Eevil\u0000`,
	}
	body := p.account("EXT-INJ")
	for from, to := range values {
		if from == `"comparethemeter"` {
			continue // NUL is refused (Postgres cannot store it); covered above
		}
		enc, _ := json.Marshal(to)
		body = strings.Replace(body, from, string(enc), 1)
	}
	r := p.As(p.token, http.MethodPost, validatePath, body)
	if r.Status != http.StatusOK {
		t.Fatalf("validate: %d %s", r.Status, r.Body)
	}
	for from, to := range values {
		if from == `"comparethemeter"` {
			continue
		}
		enc, _ := json.Marshal(to)
		if !strings.Contains(string(r.Body), string(enc)) {
			t.Errorf("validate did not return %s verbatim", enc)
		}
	}
	if r := p.As(p.token, http.MethodPost, stagePath, body); r.Status != http.StatusCreated {
		t.Fatalf("stage: %d %s", r.Status, r.Body)
	}
	if r := p.create("EXT-INJ", nil); r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var given, salutation string
	must(t, p.DB.Gorm().Raw(`SELECT given_name, salutation FROM account_customers WHERE position = 0`).Row().Scan(&given, &salutation))
	if given != values[`"Alice"`] || salutation != values[`"Dr Smith"`] {
		t.Fatalf("stored %q / %q", given, salutation)
	}
	if n := p.count(`SELECT count(*) FROM accounts`); n != 1 {
		t.Fatalf("%d accounts", n)
	}
	testutil.Tally(testutil.BadInputsTried, len(values)-1)
}

const validatePath = "/v1/data-import/validate-account/"
