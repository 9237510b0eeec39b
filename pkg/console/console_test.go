package console_test

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/auth"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// consoleStack is the real API with its console served over HTTP.
func consoleStack(t testing.TB, opts ...testutil.StackOption) (*testutil.Stack, *httptest.Server) {
	t.Helper()
	st := testutil.NewStack(t, append([]testutil.StackOption{func(c *testutil.StackConfig) {
		c.ConsoleAddr, c.ConsoleCookieSecure = "127.0.0.1:0", false
	}}, opts...)...)
	if st.API.Console == nil {
		t.Fatal("CONSOLE_ADDR set but no console handler")
	}
	srv := httptest.NewServer(st.API.Console)
	t.Cleanup(srv.Close)
	return st, srv
}

// browser is an HTTP client with cookies that does not follow redirects.
type browser struct {
	t    testing.TB
	c    *http.Client
	base string
}

func newBrowser(t testing.TB, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	Status   int
	Location string
	Body     string
	Header   http.Header
}

func (b *browser) do(method, path string, form url.Values, headers ...string) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return page{Status: resp.StatusCode, Location: resp.Header.Get("Location"), Body: string(raw), Header: resp.Header}
}

var tokenRe = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)

// token reads the CSRF token from a page's form.
func (b *browser) token(path string) string {
	b.t.Helper()
	p := b.do(http.MethodGet, path, nil)
	m := tokenRe.FindStringSubmatch(p.Body)
	if m == nil {
		b.t.Fatalf("GET %s: %d, no CSRF token in %.500s", path, p.Status, p.Body)
	}
	return m[1]
}

// post sends a form with the CSRF token of the page at from.
func (b *browser) post(from, path string, form url.Values) page {
	b.t.Helper()
	form.Set("csrf_token", b.token(from))
	return b.do(http.MethodPost, path, form)
}

// operator creates an operator with a one-time password and returns it.
func operator(t testing.TB, db *postgres.DB, name string) string {
	t.Helper()
	pw, err := auth.GenerateOperatorPassword()
	if err != nil {
		t.Fatal(err)
	}
	hash, err := auth.HashOperatorPassword(pw)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateOperator(context.Background(), name, hash); err != nil {
		t.Fatal(err)
	}
	return pw
}

// loggedIn logs in with the one-time password and sets a new one.
func loggedIn(t testing.TB, st *testutil.Stack, base, name string) *browser {
	t.Helper()
	pw := operator(t, st.DB, name)
	b := newBrowser(t, base)
	if p := b.post("/login", "/login", url.Values{"name": {name}, "password": {pw}}); p.Status != http.StatusSeeOther || p.Location != "/password" {
		t.Fatalf("login with the one-time password: %d → %q %.300s\n%s", p.Status, p.Location, p.Body, st.Logs.String())
	}
	if p := b.do(http.MethodGet, "/", nil); p.Status != http.StatusSeeOther || p.Location != "/password" {
		t.Fatalf("overview before choosing a password: %d → %q", p.Status, p.Location)
	}
	if p := b.post("/password", "/password", url.Values{"current": {pw}, "new": {"correct horse battery"}, "again": {"correct horse battery"}}); p.Status != http.StatusSeeOther || p.Location != "/" {
		t.Fatalf("change password: %d → %q %.300s", p.Status, p.Location, p.Body)
	}
	return b
}
