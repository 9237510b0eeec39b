package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/gridshift/dataimport/pkg/logging"
)

// A handler that panics answers 500 in the envelope: the stack goes to the
// log, never to the caller.
func TestPanicBecomesEnvelope(t *testing.T) {
	var logs bytes.Buffer
	s := New(Config{MaxBodyBytes: 1 << 20}, Deps{Logger: logging.New(&logs, "info")})
	s.engine.GET("/boom", func(*gin.Context) { panic("secret internal state") })
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/boom", nil))
	body := rec.Body.String()
	if rec.Code != http.StatusInternalServerError || !strings.Contains(body, `"code":"server_error"`) {
		t.Fatalf("panic answered %d %s", rec.Code, body)
	}
	for _, leak := range []string{"secret internal state", "goroutine", ".go:"} {
		if strings.Contains(body, leak) {
			t.Fatalf("body leaks %q: %s", leak, body)
		}
	}
	if !strings.Contains(logs.String(), "secret internal state") || !strings.Contains(logs.String(), "goroutine") {
		t.Fatal("the panic and its stack were not logged")
	}
	if rec.Header().Get("X-Request-ID") == "" {
		t.Fatal("no request id on the 500")
	}
}
