package testutil

import (
	"bytes"
	stdjson "encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// recordingTB captures what checkContract reports instead of failing.
type recordingTB struct {
	testing.TB
	errs []string
}

func (r *recordingTB) Helper()             {}
func (r *recordingTB) Logf(string, ...any) {}
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// The contract check itself: it accepts what the document allows and
// reports, clearly, what it does not.
func TestContractCheckCatchesMismatches(t *testing.T) {
	const validate = "/v1/data-import/validate-account/"
	account, err := ReadRepoFile("pkg/dataimport/testdata/account_valid.json")
	if err != nil {
		t.Fatal(err)
	}
	// What the API answers: the account as it writes it back (decimals and
	// money as strings), while the request sends JSON numbers, which the
	// API accepts on input (x-also-accepts-json-number).
	var acc dataimport.Account
	if err := stdjson.Unmarshal(account, &acc); err != nil {
		t.Fatal(err)
	}
	echoed, err := stdjson.Marshal(acc)
	if err != nil {
		t.Fatal(err)
	}
	json := http.Header{"Content-Type": {"application/json; charset=utf-8"}, "X-Request-Id": {"r1"}}
	noID := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	for _, tc := range []struct {
		name, method, path, reqBody string
		status                      int
		header                      http.Header
		respBody                    string
		want                        string // "" for no report
	}{
		{"valid error envelope", "POST", validate, `{}`, 400, json,
			`{"detail":"x","code":"account_failed_validation","errors":[{"detail":"d","code":"required","attr":"sales_channel"}]}`, ""},
		{"valid account echoed", "POST", validate, string(account), 200, json, string(echoed), ""},
		{"path without trailing slash", "POST", strings.TrimSuffix(validate, "/"), string(account), 200, json, string(echoed), ""},
		{"decimal written as a JSON number", "POST", validate, string(account), 200, json, string(account), "got number, want string"},
		{"undocumented status", "POST", validate, `{}`, 418, json, `{"detail":"x","code":"teapot"}`, "status 418 is not documented"},
		{"undocumented field", "POST", validate, `{}`, 400, json, `{"detail":"x","code":"parse_error","hint":"y"}`, "additional properties 'hint' not allowed"},
		{"undocumented code", "POST", validate, `{}`, 400, json, `{"detail":"x","code":"teapot"}`, "value must be one of"},
		{"missing request ID", "POST", validate, `{}`, 400, noID, `{"detail":"x","code":"parse_error"}`, "header X-Request-ID: required but missing"},
		{"wrong content type", "GET", "/healthz", "", 200, http.Header{"Content-Type": {"text/plain"}, "X-Request-Id": {"r"}}, "ok", `content type "text/plain" is not documented`},
		{"accepted request the document forbids", "POST", validate, `{"import_supplier":"A","external_account_number":"E","sales_channel":"DIRECT","colour":"red"}`, 200, json,
			`{"import_supplier":"A","external_account_number":"E","sales_channel":"DIRECT"}`, "the API accepted a request the OpenAPI document does not allow"},
		{"refused request is not validated", "POST", validate, `{"colour":"red"}`, 400, json, `{"detail":"x","code":"account_failed_validation","errors":[{"detail":"d","code":"unknown_field","attr":"colour"}]}`, ""},
		{"unknown path answered 404", "GET", "/v1/data-import/nothing/", "", 404, json, `{"detail":"Not found.","code":"not_found"}`, ""},
		{"other method answered 405", "GET", validate, "", 405, json, `{"detail":"Method \"GET\" not allowed.","code":"method_not_allowed"}`, ""},
		{"undocumented route answered", "GET", "/v1/data-import/secret/", "", 200, json, `{}`, "no path of the OpenAPI document matches, so 404 was expected"},
		{"templated path, other method", "POST", "/v1/data-import/account-transfer-status/S/E/", "", 404, json, `{"detail":"x","code":"not_found"}`, "so 405 was expected"},
		{"wrong type in a list", "GET", "/v1/data-import/all-account-import-processes/S/?page_size=1", "", 200,
			http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"r"}, "Link": {`</x?page_size=1&cursor=QQ>; rel="next"`}},
			`[{"external_account_number":"E","platform_account_number":"","account_created_at":null}]`, "does not match pattern"},
		// Issue 21: a datetime with microseconds (what encoding/json writes
		// for a time.Time) or an offset is drift from YYYY-MM-DDTHH:MM:SSZ.
		{"datetime with microseconds in a list", "GET", "/v1/data-import/all-account-import-processes/S/", "", 200, json,
			`[{"external_account_number":"E","platform_account_number":"A-0000000A","account_created_at":"2026-11-23T08:58:33.694368Z"}]`, "does not match pattern"},
		{"datetime with microseconds in a status", "GET", "/v1/data-import/account-transfer-status/S/E/", "", 200, json,
			`{"status":"COMPLETED","platform_account_number":"A-0000000A","external_account_number":"E","account_created_at":"2026-11-23T08:58:33Z","created_at":"2026-11-23T08:58:33.694368Z","modified_at":"2026-11-23T08:58:33Z","landed_digest":null}`, "does not match pattern"},
		{"datetime with an offset in a v2 status", "GET", "/v2/data-import/accounts/S/E/", "", 200, json,
			`{"status":"PENDING","scheduled":false,"platform_account_number":"","created_at":"2026-11-23T08:58:33+01:00","modified_at":"2026-11-23T08:58:33Z","schedule_window_start":null,"schedule_window_end":null,"latest_event":null,"latest_error":null}`, "does not match pattern"},
		{"whole-second UTC datetimes pass", "GET", "/v1/data-import/account-transfer-status/S/E/", "", 200, json,
			`{"status":"COMPLETED","platform_account_number":"A-0000000A","external_account_number":"E","account_created_at":"2026-11-23T08:58:33Z","created_at":"2026-11-23T08:58:33Z","modified_at":"2026-11-23T08:58:33Z","landed_digest":null}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, "http://api.test"+tc.path, bytes.NewReader([]byte(tc.reqBody)))
			if err != nil {
				t.Fatal(err)
			}
			if tc.reqBody == "" {
				req.Body, req.GetBody, req.ContentLength = http.NoBody, nil, 0
			} else {
				req.Header.Set("Content-Type", "application/json")
			}
			rec := &recordingTB{TB: t}
			checkContract(rec, req, recordBody(req), tc.status, tc.header, []byte(tc.respBody))
			got := strings.Join(rec.errs, "\n")
			switch {
			case tc.want == "" && got != "":
				t.Errorf("unexpected report:\n%s", got)
			case tc.want != "" && !strings.Contains(got, tc.want):
				t.Errorf("report does not say %q:\n%s", tc.want, got)
			}
		})
	}
}
