package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// FuzzAccountURLs: every URL built for an accepted identifier (one
// dataimport.IdentifierProblem passes, at most 128 characters) reaches the
// route it names, with the supplier and the identifier as its parameters,
// on a router with the API's routes and path settings (escapedPaths,
// unescapePathValues) whose handlers echo what they received. The URL is
// parsed the way a client parses it (http.NewRequest).
func FuzzAccountURLs(f *testing.F) {
	for _, s := range []string{"EXT-1", "ACC/7", "50%", "a?b", "a#b", "a b", "Zürich-账户", "..x", "a/../b", "X/cancel",
		"X/cancel/", "a+b", "%2F", "/", "//", "./a", "a/.", "%", "%zz", ";x=1", "é", " "} {
		f.Add("DEMO_ENERGY", s)
	}
	f.Add("A/B", "x")
	echo := echoRouter(f)
	f.Fuzz(func(t *testing.T, supplier, external string) {
		if !accepted(supplier) || !accepted(external) {
			return
		}
		for _, u := range []struct{ method, url, route string }{
			{http.MethodGet, v1StatusURL(supplier, external), "/v1/data-import/account-transfer-status/:supplier/:external/"},
			{http.MethodGet, v2StatusURL(supplier, external), "/v2/data-import/accounts/:supplier/:external/"},
			{http.MethodGet, v2EventsURL(supplier, external), "/v2/data-import/accounts/:supplier/:external/events/"},
			{http.MethodPost, v2CancelURL(supplier, external), "/v2/data-import/accounts/:supplier/:external/cancel/"},
		} {
			req, err := http.NewRequest(u.method, "http://api.test"+u.url, nil)
			if err != nil {
				t.Fatalf("%s does not parse: %v", u.url, err)
			}
			w := httptest.NewRecorder()
			echo.ServeHTTP(w, req)
			got := w.Header()
			if w.Code != http.StatusOK || got.Get("X-Route") != u.route || got.Get("X-Supplier") != supplier || got.Get("X-External") != external {
				t.Fatalf("%s %s (supplier %q, external %q) reached %d %q with %q, %q", u.method, u.url, supplier, external,
					w.Code, got.Get("X-Route"), got.Get("X-Supplier"), got.Get("X-External"))
			}
		}
	})
}

// accepted is what validation lets through as an identifier.
func accepted(s string) bool {
	return s != "" && utf8.RuneCountInString(s) <= 128 && dataimport.IdentifierProblem(s) == ""
}

// echoRouter has every route of the real router (New), with the same path
// handling, each answering its pattern and parameters in headers.
func echoRouter(tb testing.TB) *gin.Engine {
	real := New(Config{}, Deps{})
	e := gin.New()
	e.RedirectTrailingSlash, e.RedirectFixedPath = false, false
	escapedPaths(e)
	e.Use(unescapePathValues())
	for _, r := range real.engine.Routes() {
		e.Handle(r.Method, r.Path, func(c *gin.Context) {
			c.Header("X-Route", c.FullPath())
			c.Header("X-Supplier", c.Param("supplier"))
			c.Header("X-External", c.Param("external"))
			c.Status(http.StatusOK)
		})
	}
	if len(e.Routes()) < 10 {
		tb.Fatalf("only %d routes copied", len(e.Routes()))
	}
	return e
}
