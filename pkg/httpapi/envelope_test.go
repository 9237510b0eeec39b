package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/testutil"
)

func TestErrorEnvelope(t *testing.T) {
	st := testutil.NewStack(t, func(c *testutilConfig) { c.MaxBodyBytes = 64 << 10 })
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	validate := "/v1/data-import/validate-account/"

	t.Run("malformed JSON", func(t *testing.T) {
		r := st.As(ten.Token, http.MethodPost, validate, `{"import_supplier": "ACME",`)
		assertEnvelope(t, r, http.StatusBadRequest, "parse_error")
	})
	t.Run("unknown field at depth", func(t *testing.T) {
		body := strings.Replace(readFixture(t), `"mpxn"`, `"colour": "red", "mpxn"`, 1)
		body = strings.Replace(body, `"given_name"`, `"nickname": "Bob", "given_name"`, 1)
		r := st.As(ten.Token, http.MethodPost, validate, body)
		assertEnvelope(t, r, http.StatusBadRequest, "account_failed_validation")
		got := fieldErrors(t, r)
		for _, want := range []string{"supply_addresses.0.meter_points.0.colour", "customers.0.nickname"} {
			if got[want] != "unknown_field" {
				t.Errorf("missing unknown_field at %s; got %v", want, got)
			}
		}
	})
	t.Run("413 over MAX_BODY_BYTES", func(t *testing.T) {
		r := st.As(ten.Token, http.MethodPost, validate, `{"x":"`+strings.Repeat("a", 70<<10)+`"}`)
		assertEnvelope(t, r, http.StatusRequestEntityTooLarge, "request_too_large")
	})
	t.Run("413 for a chunked body without length", func(t *testing.T) {
		r := st.As(ten.Token, http.MethodPost, validate, io.MultiReader(strings.NewReader(`{"x":"`+strings.Repeat("a", 70<<10)+`"}`)))
		assertEnvelope(t, r, http.StatusRequestEntityTooLarge, "request_too_large")
	})
	t.Run("415 for non-JSON", func(t *testing.T) {
		r := st.As(ten.Token, http.MethodPost, validate, "a=b", "Content-Type", "application/x-www-form-urlencoded")
		assertEnvelope(t, r, http.StatusUnsupportedMediaType, "unsupported_media_type")
	})
	t.Run("unknown route", func(t *testing.T) {
		r := st.As(ten.Token, http.MethodGet, "/v1/data-import/nothing-here/", nil)
		assertEnvelope(t, r, http.StatusNotFound, "not_found")
	})
	t.Run("method not allowed", func(t *testing.T) {
		r := st.As(ten.Token, http.MethodGet, validate, nil)
		assertEnvelope(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
	})
	t.Run("request id echoed or made", func(t *testing.T) {
		r := st.As(ten.Token, http.MethodGet, "/v1/data-import/nothing-here/", nil, "X-Request-ID", "partner-req-42")
		if r.Header.Get("X-Request-ID") != "partner-req-42" {
			t.Fatalf("request id not echoed: %q", r.Header.Get("X-Request-ID"))
		}
		if !strings.Contains(st.Logs.String(), `"request_id":"partner-req-42"`) {
			t.Fatal("request id missing from logs")
		}
		r = st.Request(http.MethodGet, "/healthz", nil, "X-Request-ID", "bad id <script>")
		if id := r.Header.Get("X-Request-ID"); id == "" || strings.ContainsAny(id, " <>") {
			t.Fatalf("unsafe request id handled badly: %q", id)
		}
	})
	t.Run("probes and metrics", func(t *testing.T) {
		if r := st.Request(http.MethodGet, "/healthz", nil); r.Status != http.StatusOK {
			t.Fatalf("healthz %d", r.Status)
		}
		if r := st.Request(http.MethodGet, "/readyz", nil); r.Status != http.StatusOK {
			t.Fatalf("readyz %d %s", r.Status, r.Body)
		}
		r := st.Request(http.MethodGet, "/metrics", nil)
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `dataimport_http_requests_total{method="POST",route="/v1/data-import/validate-account/",status="400"}`) ||
			!strings.Contains(string(r.Body), "dataimport_http_request_duration_seconds_bucket") {
			t.Fatalf("metrics missing route counters:\n%.2000s", r.Body)
		}
	})
}

func TestReadyzWhenRedisDown(t *testing.T) {
	st := testutil.NewStack(t)
	st.Redis.Stop()
	r := st.Request(http.MethodGet, "/readyz", nil)
	if r.Status != http.StatusServiceUnavailable || r.JSON()["checks"].(map[string]any)["redis"] != "unavailable" {
		t.Fatalf("readyz with redis down: %d %s", r.Status, r.Body)
	}
}
