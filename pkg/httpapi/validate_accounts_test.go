package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/httpapi"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

const validateManyPath = "/v1/data-import/validate-accounts/"

func compactLine(t *testing.T, js string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(js)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// validate-accounts answers each line as validate-account would (the
// supplier's market and catalogue included), in order, stages nothing, and
// refuses what is not NDJSON or too many lines in the one error envelope.
func TestValidateAccountsMany(t *testing.T) {
	st := testutil.NewStack(t)
	st.Supplier("DEMO_ENERGY")
	on := true
	if _, err := st.DB.UpdateSupplierSettings(context.Background(), "DEMO_ENERGY", postgres.SupplierSettings{RequireProducts: &on}); err != nil {
		t.Fatal(err)
	}
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	valid := compactLine(t, account(t, "EXT-M1"))
	lines := []string{
		valid,
		"",
		compactLine(t, strings.Replace(account(t, "EXT-M2"), `"07400 123456"`, `"12"`, 1)),
		`{"import_supplier": "NOPE", "external_account_number": "EXT-M3"}`,
		`not json`,
	}
	ndjson := func(body string) testutil.Response {
		return st.As(ten.Token, http.MethodPost, validateManyPath, body, "Content-Type", "application/x-ndjson")
	}
	r := ndjson(strings.Join(lines, "\n") + "\n")
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("validate-accounts: %d %s", r.Status, r.Body)
	}
	type result struct {
		Line     int    `json:"line"`
		External string `json:"external_account_number"`
		Valid    bool   `json:"valid"`
		Code     string `json:"code"`
		Errors   []struct{ Attr, Code string }
	}
	var got []result
	for _, l := range strings.Split(strings.TrimSpace(string(r.Body)), "\n") {
		var one result
		if err := json.Unmarshal([]byte(l), &one); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		got = append(got, one)
	}
	if len(got) != 4 {
		t.Fatalf("%d results, want 4 (blank line skipped):\n%s", len(got), r.Body)
	}
	// The valid account names a product only when the supplier requires
	// products; its answer must be validate-account's.
	single := st.As(ten.Token, http.MethodPost, validatePath, valid)
	if got[0].Line != 1 || got[0].External != "EXT-M1" || got[0].Valid != (single.Status == http.StatusOK) {
		t.Errorf("line 1: %+v (validate-account %d)", got[0], single.Status)
	}
	if g := got[1]; g.Line != 3 || g.Valid || g.Code != "account_failed_validation" || len(g.Errors) == 0 || g.External != "EXT-M2" {
		t.Errorf("line 3: %+v", g)
	}
	if g := got[2]; g.Line != 4 || g.Valid || g.Code != "import_supplier_not_found" {
		t.Errorf("line 4: %+v", g)
	}
	if g := got[3]; g.Line != 5 || g.Valid || g.Code != "parse_error" {
		t.Errorf("line 5: %+v", g)
	}
	// Nothing staged.
	if s := st.As(ten.Token, http.MethodGet, "/v1/data-import/all-account-import-processes/DEMO_ENERGY/", nil); s.Status != http.StatusOK || strings.Contains(string(s.Body), "EXT-M1") {
		t.Errorf("list after validate-accounts: %d %s", s.Status, s.Body)
	}

	// Too many lines, wrong media type: refused in the envelope.
	tooMany := strings.Repeat("{}\n", httpapi.MaxValidateLines+1)
	if r := ndjson(tooMany); r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), `"invalid_payload"`) {
		t.Errorf("%d lines: %d %s", httpapi.MaxValidateLines+1, r.Status, r.Body)
	}
	if r := st.As(ten.Token, http.MethodPost, validateManyPath, valid, "Content-Type", "text/csv"); r.Status != http.StatusUnsupportedMediaType {
		t.Errorf("text/csv: %d %s", r.Status, r.Body)
	}
	if r := st.Request(http.MethodPost, validateManyPath, valid, "Content-Type", "application/x-ndjson"); r.Status != http.StatusUnauthorized {
		t.Errorf("no token: %d %s", r.Status, r.Body)
	}
}
