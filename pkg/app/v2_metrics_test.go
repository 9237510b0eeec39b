package app_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// The worker's dataimport_scheduled_accounts_waiting counts accounts
// scheduled through v2 that have not started: not those created, nor those
// cancelled.
func TestV2ScheduledWaitingMetric(t *testing.T) {
	p := newPipeline(t)
	w := p.StartWorker()
	later := map[string]any{"schedule_window_start": ts(time.Now().Add(time.Minute))}
	for _, ext := range []string{"EXT-1", "EXT-2"} {
		if r := p.createV2(ext, later); r.Status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", ext, r.Status, r.Body)
		}
	}
	if r := p.createV2("EXT-NOW", nil); r.Status != http.StatusCreated {
		t.Fatalf("create EXT-NOW: %d %s", r.Status, r.Body)
	}
	if st := p.waitV2("EXT-NOW", 15*time.Second); st["status"] != "PROCESSED" {
		t.Fatalf("EXT-NOW: %v", st)
	}
	metric := func() string {
		rec := httptest.NewRecorder()
		w.Probes.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		for _, line := range strings.Split(rec.Body.String(), "\n") {
			if strings.HasPrefix(line, "dataimport_scheduled_accounts_waiting ") {
				return line
			}
		}
		t.Fatalf("worker metrics lack dataimport_scheduled_accounts_waiting")
		return ""
	}
	if got := metric(); got != "dataimport_scheduled_accounts_waiting 2" {
		t.Fatalf("%s, want 2", got)
	}
	if r := p.As(p.token, http.MethodPost, v2Accounts+"DEMO_ENERGY/EXT-1/cancel/", nil); r.Status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	if got := metric(); got != "dataimport_scheduled_accounts_waiting 1" {
		t.Fatalf("after a cancel: %s, want 1", got)
	}
}
