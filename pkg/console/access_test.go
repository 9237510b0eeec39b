package console_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// consoleRoutes is every route of the console (pkg/console.New) with a
// request that would be valid with a session.
var consoleRoutes = []struct{ method, path string }{
	{http.MethodGet, "/"}, {http.MethodGet, "/overview/live"}, {http.MethodGet, "/overview/chart.json"},
	{http.MethodPost, "/limit"}, {http.MethodPost, "/limit/caps"}, {http.MethodGet, "/suppliers/ACME"}, {http.MethodPost, "/suppliers/ACME/status"},
	{http.MethodPost, "/suppliers/ACME/brake"},
	{http.MethodGet, "/suppliers/ACME/accounts?number=EXT-1"}, {http.MethodPost, "/suppliers/ACME/accounts/skip"},
	{http.MethodPost, "/suppliers/ACME/accounts/unskip"}, {http.MethodPost, "/suppliers/ACME/accounts/retry"},
	{http.MethodGet, "/suppliers/ACME/failures"}, {http.MethodGet, "/suppliers/ACME/failures/1"}, {http.MethodPost, "/suppliers/ACME/failures/retry"},
	{http.MethodGet, "/audit"}, {http.MethodGet, "/password"}, {http.MethodPost, "/password"}, {http.MethodPost, "/logout"},
	{http.MethodGet, "/no-such-page"},
}

// TestConsoleAccess: without a session every route redirects to /login, a
// partner token opens nothing, a POST without the CSRF token is refused and
// changes nothing, a console session is no partner credential, and failed
// logins are throttled like obtainToken.
func TestConsoleAccess(t *testing.T) {
	st, srv := consoleStack(t)
	st.Supplier("ACME")
	ten := st.Tenant("Partner", "ACME")

	anon := newBrowser(t, srv.URL)
	for _, r := range consoleRoutes {
		for _, hdr := range [][]string{nil, {"Authorization", "Token " + ten.Token}} {
			var form url.Values
			if r.method == http.MethodPost {
				form = url.Values{"limit": {"1"}, "status": {"Paused"}}
			}
			p := anon.do(r.method, r.path, form, hdr...)
			if p.Status != http.StatusSeeOther || p.Location != "/login" {
				t.Errorf("%s %s without a session (headers %v): %d → %q, want 303 → /login", r.method, r.path, hdr, p.Status, p.Location)
			}
		}
	}
	if p := anon.do(http.MethodGet, "/login", nil); p.Status != http.StatusOK || !strings.Contains(p.Body, `name="password"`) {
		t.Fatalf("GET /login: %d", p.Status)
	}
	if p := anon.do(http.MethodGet, "/static/vendor/htmx.min.js", nil); p.Status != http.StatusOK || len(p.Body) < 10000 {
		t.Fatalf("embedded htmx: %d, %d bytes", p.Status, len(p.Body))
	}

	b := loggedIn(t, st, srv.URL, "alice")
	if p := b.do(http.MethodGet, "/", nil); p.Status != http.StatusOK || !strings.Contains(p.Body, "ACME") {
		t.Fatalf("overview: %d %.300s", p.Status, p.Body)
	}
	// Every state-changing route refuses a POST without the token.
	for _, r := range consoleRoutes {
		if r.method != http.MethodPost {
			continue
		}
		p := b.do(r.method, r.path, url.Values{"limit": {"1"}, "status": {"Paused"}})
		if p.Status != http.StatusForbidden {
			t.Errorf("%s %s without CSRF token: %d, want 403", r.method, r.path, p.Status)
		}
		p = b.do(r.method, r.path, url.Values{"limit": {"1"}, "status": {"Paused"}, "csrf_token": {"forged"}})
		if p.Status != http.StatusForbidden {
			t.Errorf("%s %s with a forged CSRF token: %d, want 403", r.method, r.path, p.Status)
		}
	}
	if _, on, _ := st.DB.ConcurrencyLimit(t.Context()); on {
		t.Fatal("a refused POST set the limit")
	}
	if s, _ := st.DB.SupplierByCode(t.Context(), "ACME"); s.Status != "Ongoing" {
		t.Fatalf("a refused POST changed the supplier: %s", s.Status)
	}
	// With the token the same POST works, under the operator's name.
	if p := b.post("/", "/limit", url.Values{"limit": {"5"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("POST /limit: %d %s", p.Status, p.Body)
	}
	if n, on, _ := st.DB.ConcurrencyLimit(t.Context()); !on || n != 5 {
		t.Fatalf("limit after the console set it: %d %v", n, on)
	}
	rows, err := st.DB.AuditLog(t.Context(), time.Time{}, 10)
	if err != nil || len(rows) == 0 || rows[0].Actor != "operator:alice" || rows[0].Action != postgres.AuditLimitSet {
		t.Fatalf("audit after the console's limit: %+v %v", rows, err)
	}
	// A supplier's cap: set, shown on the overview, audited; an unknown name is refused.
	if p := b.post("/", "/limit/caps", url.Values{"scope": {"supplier"}, "name": {"ACME"}, "limit": {"2"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("POST /limit/caps: %d %s", p.Status, p.Body)
	}
	if caps, err := st.DB.ConcurrencyCaps(t.Context()); err != nil || len(caps.Suppliers) != 1 || len(caps.Organisations) != 0 {
		t.Fatalf("caps after the console set one: %+v %v", caps, err)
	}
	if p := b.do(http.MethodGet, "/", nil); !strings.Contains(p.Body, "<td>supplier</td><td>ACME</td><td>2</td>") {
		t.Fatalf("overview does not show the supplier's cap: %.2000s", p.Body)
	}
	if rows, err := st.DB.AuditLog(t.Context(), time.Time{}, 1); err != nil || rows[0].Target != "supplier:ACME" || rows[0].Actor != "operator:alice" {
		t.Fatalf("audit after the console's cap: %+v %v", rows, err)
	}
	if p := b.post("/", "/limit/caps", url.Values{"scope": {"organisation"}, "name": {"Nobody"}, "limit": {"2"}}); p.Status != http.StatusNotFound {
		t.Fatalf("cap of an unknown organisation: %d", p.Status)
	}

	// The console's session is no partner credential.
	var session string
	for _, ck := range b.c.Jar.Cookies(mustURL(srv.URL)) {
		if ck.Name == "console_session" {
			session = ck.Value
		}
	}
	if session == "" {
		t.Fatal("no console_session cookie")
	}
	for _, hdr := range [][]string{{"Cookie", "console_session=" + session}, {"Authorization", "Token " + session}} {
		r := st.Request(http.MethodGet, "/v1/data-import/account-transfer-status/ACME/EXT-1/", nil, hdr...)
		if r.Status != http.StatusUnauthorized {
			t.Errorf("partner API with the console session in %s: %d, want 401", hdr[0], r.Status)
		}
	}

	// Sessions expire: one past its expiry opens nothing.
	expired := loggedIn(t, st, srv.URL, "bob")
	if err := st.DB.Gorm().Exec(`UPDATE operator_sessions SET expires_at = now() - interval '1 second'
		WHERE operator_id = (SELECT id FROM operators WHERE name = 'bob')`).Error; err != nil {
		t.Fatal(err)
	}
	if p := expired.do(http.MethodGet, "/", nil); p.Status != http.StatusSeeOther || p.Location != "/login" {
		t.Fatalf("an expired session: %d → %q, want 303 → /login", p.Status, p.Location)
	}

	// Logout ends the session server-side.
	if p := b.post("/", "/logout", url.Values{}); p.Status != http.StatusSeeOther || p.Location != "/login" {
		t.Fatalf("logout: %d → %q", p.Status, p.Location)
	}
	replay := newBrowser(t, srv.URL)
	if p := replay.do(http.MethodGet, "/", nil, "Cookie", "console_session="+session); p.Status != http.StatusSeeOther {
		t.Fatalf("a logged-out session still opens the console: %d", p.Status)
	}

	// Ten wrong passwords from one address (more if the machine is slow
	// enough for the bucket to drain), then even the right one waits.
	thief := newBrowser(t, srv.URL)
	testutil.FailUntilThrottled(t, 10, func(i int) bool {
		p := thief.post("/login", "/login", url.Values{"name": {"alice"}, "password": {"wrong password " + strconv.Itoa(i)}})
		if p.Status != http.StatusUnauthorized && p.Status != http.StatusTooManyRequests {
			t.Fatalf("wrong password %d: %d", i, p.Status)
		}
		return p.Status == http.StatusTooManyRequests
	})
	p := thief.post("/login", "/login", url.Values{"name": {"alice"}, "password": {"correct horse battery"}})
	if p.Status != http.StatusTooManyRequests || p.Header.Get("Retry-After") == "" {
		t.Fatalf("11th login: %d (Retry-After %q), want 429", p.Status, p.Header.Get("Retry-After"))
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}
