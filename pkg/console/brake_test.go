package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// The supplier page sets and shows the error-rate brake, and says who
// paused the supplier and why.
func TestConsoleSupplierBrakeAndPauseReason(t *testing.T) {
	st, srv := consoleStack(t)
	st.Supplier("ACME")
	b := loggedIn(t, st, srv.URL, "alice")
	page := "/suppliers/ACME"
	if p := b.post(page, page+"/brake", url.Values{"failure_rate": {"5%"}, "window": {"9"}}); p.Status != http.StatusBadRequest {
		t.Fatalf("window 9: %d, want 400", p.Status)
	}
	if p := b.post(page, page+"/brake", url.Values{"failure_rate": {"2.5%"}, "window": {"200"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("set brake: %d %s", p.Status, p.Body)
	}
	s, err := st.DB.SupplierByCode(t.Context(), "ACME")
	if err != nil || s.Brake == nil || s.Brake.FailureBP != 250 || s.Brake.Window != 200 {
		t.Fatalf("brake stored: %+v %v", s.Brake, err)
	}
	if p := b.do(http.MethodGet, page, nil); !strings.Contains(p.Body, "<strong>2.5%</strong> of its last <strong>200</strong>") {
		t.Fatalf("brake not shown: %.2000s", p.Body)
	}
	ctx := postgres.WithActor(t.Context(), "operator:alice")
	if err := st.DB.SetSupplierStatus(ctx, "ACME", dataimport.SupplierPaused); err != nil {
		t.Fatal(err)
	}
	if p := b.do(http.MethodGet, page, nil); !strings.Contains(p.Body, `id="pause-reason">Paused by <strong>operator:alice</strong>`) {
		t.Fatalf("pause reason not shown: %.2000s", p.Body)
	}
	if p := b.post(page, page+"/brake", url.Values{"off": {"true"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("brake off: %d", p.Status)
	}
	if s, _ := st.DB.SupplierByCode(t.Context(), "ACME"); s.Brake != nil {
		t.Fatalf("brake still on: %+v", s.Brake)
	}
	rows, err := st.DB.AuditLog(t.Context(), s.CreatedAt, 10)
	if err != nil {
		t.Fatal(err)
	}
	var brakes int
	for _, r := range rows {
		if r.Action == postgres.AuditSupplierBrake && r.Actor == "operator:alice" {
			brakes++
		}
	}
	if brakes != 2 {
		t.Fatalf("%d brake audit rows by alice, want 2: %+v", brakes, rows)
	}
}
