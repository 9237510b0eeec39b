package httpapi_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/testutil"
)

const listPath = "/v1/data-import/all-account-import-processes/"

// Path segments and query values that Postgres cannot hold as text (NUL,
// invalid UTF-8) or that are not sane (control characters, huge) are
// refused before any query: 404 for a path segment, 400 in the envelope for
// a query value. Each used to answer 500.
func TestHostilePathAndQueryValues(t *testing.T) {
	st := testutil.NewStack(t)
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	cursor := func(raw string) string { return base64.RawURLEncoding.EncodeToString([]byte(raw)) }
	for _, tc := range []struct {
		name, path string
		status     int
		code       string
	}{
		{"NUL in supplier", statusPath("DEMO%00", "EXT-1"), 404, "not_found"},
		{"invalid UTF-8 in supplier", statusPath("DEMO%FF", "EXT-1"), 404, "not_found"},
		{"NUL in external", statusPath("DEMO_ENERGY", "EXT%00"), 404, "not_found"},
		{"invalid UTF-8 in external", statusPath("DEMO_ENERGY", "EXT%FF"), 404, "not_found"},
		{"control character in external", statusPath("DEMO_ENERGY", "EXT%1B"), 404, "not_found"},
		{"huge external", statusPath("DEMO_ENERGY", strings.Repeat("x", 5000)), 404, "not_found"},
		{"NUL in list supplier", listPath + "DEMO%00/", 404, "not_found"},
		{"invalid UTF-8 in list supplier", listPath + "%FF%FE/", 404, "not_found"},
		{"cursor of NUL", listPath + "DEMO_ENERGY/?page_size=5&cursor=" + cursor("\x00"), 400, "invalid_payload"},
		{"cursor of invalid UTF-8", listPath + "DEMO_ENERGY/?page_size=5&cursor=" + cursor("EXT-\xff"), 400, "invalid_payload"},
		{"cursor with a control character", listPath + "DEMO_ENERGY/?page_size=5&cursor=" + cursor("EXT\x1b"), 400, "invalid_payload"},
		{"NUL in a query value", listPath + "DEMO_ENERGY/?page_size=5%00", 400, "invalid_payload"},
		{"invalid UTF-8 in a query value", listPath + "DEMO_ENERGY/?page_size=%FF", 400, "invalid_payload"},
		{"NUL in a query key", listPath + "DEMO_ENERGY/?x%00=1", 400, "invalid_payload"},
		{"malformed query escape", listPath + "DEMO_ENERGY/?page_size=%zz", 400, "invalid_payload"},
		{"huge query value", listPath + "DEMO_ENERGY/?x=" + strings.Repeat("y", 5000), 400, "invalid_payload"},
		{"NUL in a POST query flag", "/v1/data-import/transactions/create/?check_previously_added=%00", 400, "invalid_payload"},
		{"invalid UTF-8 in a status query", statusPath("DEMO_ENERGY", "EXT-1") + "?x=%FF", 400, "invalid_payload"},
		{"control character in a validate query", validatePath + "?x=%07", 400, "invalid_payload"},
		{"too many query parameters", listPath + "DEMO_ENERGY/?" + strings.Repeat("a=1&", 20) + "a=1", 400, "invalid_payload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body any
			method := http.MethodGet
			if strings.Contains(tc.path, "/create/") || strings.HasPrefix(tc.path, validatePath) {
				method, body = http.MethodPost, `{}`
			}
			assertEnvelope(t, st.As(ten.Token, method, tc.path, body), tc.status, tc.code)
		})
	}
	// Clean values still work, and an unknown but clean account is a 404.
	if r := st.As(ten.Token, http.MethodGet, listPath+"DEMO_ENERGY/?page_size=5&cursor="+cursor("EXT-1"), nil); r.Status != http.StatusOK {
		t.Fatalf("clean cursor: %d %s", r.Status, r.Body)
	}
	assertEnvelope(t, st.As(ten.Token, http.MethodGet, statusPath("DEMO_ENERGY", "EXT-%C3%A9"), nil), http.StatusNotFound, "not_found")
}
