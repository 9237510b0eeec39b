package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gridshift/dataimport/pkg/logging"
)

// A database refusal of the data that escapes a handler is a 400 in the
// envelope (retrying it unchanged cannot work); conflicts between our own
// writers, our guard and outages keep their 500 / 503.
func TestAbortWithErrorDataRefused(t *testing.T) {
	var logs bytes.Buffer
	s := New(Config{MaxBodyBytes: 1 << 20}, Deps{Logger: logging.New(&logs, "info")})
	cases := []struct {
		name       string
		err        *pgconn.PgError
		status     int
		code       string
		mentioning string
	}{
		{"check (23514)", &pgconn.PgError{Code: "23514", TableName: "account_notes", ConstraintName: "account_notes_body_check"},
			http.StatusBadRequest, "data_refused", "account_notes_body_check"},
		{"numeric overflow (22003)", &pgconn.PgError{Code: "22003"}, http.StatusBadRequest, "data_refused", "too large"},
		{"internal collision (23505)", &pgconn.PgError{Code: "23505", ConstraintName: "accounts_platform_account_number_key"},
			http.StatusInternalServerError, "server_error", ""},
		{"stale attempt guard (DIA01)", &pgconn.PgError{Code: "DIA01"}, http.StatusInternalServerError, "server_error", ""},
		{"connection lost (08006)", &pgconn.PgError{Code: "08006"}, http.StatusServiceUnavailable, "service_unavailable", ""},
	}
	for i, tc := range cases {
		path := fmt.Sprintf("/refused/%d", i)
		s.engine.GET(path, func(c *gin.Context) {
			tc.err.Message, tc.err.Detail = "violates", "Failing row contains (secret)."
			abortWithError(c, fmt.Errorf("insert notes: %w", tc.err))
		})
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			var env envelope
			if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || rec.Code != tc.status || env.Code != tc.code {
				t.Fatalf("answered %d %s, want %d %s", rec.Code, rec.Body, tc.status, tc.code)
			}
			if !strings.Contains(env.Detail, tc.mentioning) || strings.Contains(env.Detail, "secret") || strings.Contains(env.Detail, "insert notes") {
				t.Errorf("detail %q", env.Detail)
			}
		})
	}
	if !strings.Contains(logs.String(), "violates (SQLSTATE 23514)") {
		t.Errorf("the database's own message was not logged for operators:\n%s", logs.String())
	}
}
