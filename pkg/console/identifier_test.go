package console_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// identifierShapes are external account numbers the API accepts that are
// not plain path segments: each must round-trip through every URL the API
// and the console emit for its account.
var identifierShapes = []string{
	"ACC/7", "50%", "50%25", "a?b=1", "a#b", "a b", " lead-and-trail ", "Zürich-账户-№7", "..x", "a/../b", "a/./b",
	"X/cancel", "X/cancel/", "X/events/", "/", "a+b", "a;b", "%2F", "%zz", "~a&b=c", `quote"s<tag>`,
}

// unaddressable are refused at validation, with one rule
// (dataimport.IdentifierProblem): clients drop dot segments, and control
// characters are refused in every path segment.
var unaddressable = []string{".", "..", "a\x00b", "tab\there", "line\nfeed", "\u0085"}

func accountBody(t testing.TB, supplier, external string) map[string]any {
	t.Helper()
	raw, err := testutil.ReadRepoFile("pkg/dataimport/testdata/account_valid.json")
	if err != nil {
		t.Fatal(err)
	}
	var a map[string]any
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	a["import_supplier"], a["external_account_number"] = supplier, external
	return a
}

var (
	skipFormRe = regexp.MustCompile(`<form method="post" action="([^"]+)"[^>]*data-confirm="Mark [^>]*>\s*<input[^>]*name="csrf_token"[^>]*><input type="hidden" name="external" value="([^"]*)">`)
	headingRe  = regexp.MustCompile(`<h1>Account (.*?) <small>`)
)

// heading is the account number the console page shows.
func heading(body string) string {
	if m := headingRe.FindStringSubmatch(body); m != nil {
		return html.UnescapeString(m[1])
	}
	return ""
}

// TestIdentifierRoundTrip: for every identifier shape, every URL the API
// and the console emit (v2 status_url and Location, its events and cancel,
// the v1 status_url, the console account page and its skip form) reaches
// that account through the real gin router and console, and the cancel
// and skip act on it. Identifiers no URL can carry are refused.
func TestIdentifierRoundTrip(t *testing.T) {
	st, srv := consoleStack(t)
	for _, s := range []string{"DEMO_ENERGY", "ALPHA", "BRAVO"} {
		st.Supplier(s)
	}
	ten := st.Tenant("Round Trip Partner", "DEMO_ENERGY", "ALPHA", "BRAVO")
	if _, err := st.DB.CreateTeam(context.Background(), "Migrations"); err != nil {
		t.Fatal(err)
	}
	b := loggedIn(t, st, srv.URL, "roundtrip")
	window := time.Now().Add(2 * time.Hour).UTC().Format(time.RFC3339)

	for _, ext := range identifierShapes {
		t.Run(url.PathEscape(ext), func(t *testing.T) {
			want := strings.TrimSpace(ext) // validation trims the number			// v2 (DEMO_ENERGY): a scheduled account the partner stops.
			r := st.As(ten.Token, http.MethodPost, "/v2/data-import/accounts/",
				map[string]any{"payload": accountBody(t, "DEMO_ENERGY", ext), "task_params": map[string]any{"schedule_window_start": window}})
			if r.Status != http.StatusCreated {
				t.Fatalf("v2 create: %d %s", r.Status, r.Body)
			}
			var created struct {
				StatusURL string `json:"status_url"`
			}
			r.Decode(&created)
			if loc := r.Header.Get("Location"); loc != created.StatusURL {
				t.Fatalf("Location %q, status_url %q", loc, created.StatusURL)
			}
			if r := st.As(ten.Token, http.MethodGet, created.StatusURL, nil); r.Status != http.StatusOK || r.JSON()["scheduled"] != true {
				t.Fatalf("GET status_url %s: %d %s", created.StatusURL, r.Status, r.Body)
			}
			if r := st.As(ten.Token, http.MethodGet, created.StatusURL+"events/", nil); r.Status != http.StatusOK {
				t.Fatalf("GET events %s: %d %s", created.StatusURL, r.Status, r.Body)
			}
			r = st.As(ten.Token, http.MethodPost, created.StatusURL+"cancel/", nil)
			if r.Status != http.StatusOK || r.JSON()["status_url"] != created.StatusURL {
				t.Fatalf("POST cancel %s: %d %s", created.StatusURL, r.Status, r.Body)
			}
			if r := st.As(ten.Token, http.MethodGet, created.StatusURL, nil); r.Status != http.StatusOK || r.JSON()["status"] != "CANCELLED" {
				t.Fatalf("after cancel %s: %d %s", created.StatusURL, r.Status, r.Body)
			}

			// v1 (ALPHA): stage, create asynchronously, follow status_url.
			if r := st.As(ten.Token, http.MethodPost, "/v1/data-import/account-import-process/create-or-update/", accountBody(t, "ALPHA", ext)); r.Status != http.StatusCreated {
				t.Fatalf("v1 stage: %d %s", r.Status, r.Body)
			}
			r = st.As(ten.Token, http.MethodPost, "/v1/data-import/account-import-process/process/",
				map[string]any{"external_account_number": ext, "import_supplier_code": "ALPHA", "operations_team_name": "Migrations"}, "Prefer", "respond-async")
			if r.Status != http.StatusAccepted {
				t.Fatalf("v1 create: %d %s", r.Status, r.Body)
			}
			v1URL, _ := r.JSON()["status_url"].(string)
			if r := st.As(ten.Token, http.MethodGet, v1URL, nil); r.Status != http.StatusOK || r.JSON()["external_account_number"] != want {
				t.Fatalf("GET v1 status_url %s: %d %s", v1URL, r.Status, r.Body)
			}

			// Console (BRAVO): the account page, then its skip form.
			if r := st.As(ten.Token, http.MethodPost, "/v1/data-import/account-import-process/create-or-update/", accountBody(t, "BRAVO", ext)); r.Status != http.StatusCreated {
				t.Fatalf("v1 stage for the console: %d %s", r.Status, r.Body)
			}
			// The console's link to the account page (accountURL) carries
			// the number in the query, as the page's own search form does.
			page := "/suppliers/BRAVO/accounts?number=" + url.QueryEscape(ext)
			p := b.do(http.MethodGet, page, nil)
			m := skipFormRe.FindStringSubmatch(p.Body)
			if p.Status != http.StatusOK || m == nil || heading(p.Body) != want {
				t.Fatalf("account page %s: %d, heading %q, no skip form in %.600s", page, p.Status, heading(p.Body), p.Body)
			}
			action, external := html.UnescapeString(m[1]), html.UnescapeString(m[2])
			p = b.post(page, action, url.Values{"external": {external}})
			if p.Status != http.StatusSeeOther || p.Location == "" {
				t.Fatalf("skip form %s: %d %q %.300s", action, p.Status, p.Location, p.Body)
			}
			after := p.Location
			p = b.do(http.MethodGet, after, nil)
			if p.Status != http.StatusOK || !strings.Contains(p.Body, `id="skipped"`) || heading(p.Body) != want {
				t.Fatalf("after skip, %s: %d, heading %q %.600s", after, p.Status, heading(p.Body), p.Body)
			}
		})
	}

	for _, ext := range unaddressable {
		r := st.As(ten.Token, http.MethodPost, "/v2/data-import/accounts/", map[string]any{"payload": accountBody(t, "DEMO_ENERGY", ext)})
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), `"external_account_number"`) {
			t.Errorf("v2 create %q: %d %s", ext, r.Status, r.Body)
		}
		if r := st.As(ten.Token, http.MethodPost, "/v1/data-import/validate-account/", accountBody(t, "DEMO_ENERGY", ext)); r.Status != http.StatusBadRequest {
			t.Errorf("v1 validate %q: %d %s", ext, r.Status, r.Body)
		}
	}
}
