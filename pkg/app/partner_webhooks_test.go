package app_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A partner registers a loopback receiver through the API (make run's
// WEBHOOK_ALLOW_PRIVATE), sends a test event and receives it with a valid
// signature; real events follow; a rotated secret keeps the old one signing
// beside it; another organisation can neither see nor change the endpoint;
// every change is audited under the key that made it.
func TestPartnerSelfServeWebhooks(t *testing.T) {
	p := newPipeline(t, hookWorker(true))
	p.StartWorker(hookWorker(true))
	rcv := newHookReceiver(t)
	other := p.Tenant("Other Partner", "DEMO_ENERGY")

	r := p.As(p.token, http.MethodPost, "/v1/data-import/webhooks/",
		map[string]any{"url": rcv.URL + "/hooks", "description": "cohort 3"})
	if r.Status != http.StatusCreated {
		t.Fatalf("register: %d %s\n%s", r.Status, r.Body, p.Logs.String())
	}
	created := r.JSON()
	secret, _ := created["secret"].(string)
	id := int64(created["id"].(float64))
	base := "/v1/data-import/webhooks/" + strconv.FormatInt(id, 10) + "/"
	if !strings.HasPrefix(secret, "whsec_") || created["enabled"] != true || created["description"] != "cohort 3" {
		t.Fatalf("registered %v", created)
	}
	rcv.useSecret(t, secret)

	// The test event, signed like any delivery.
	r = p.As(p.token, http.MethodPost, base+"test/", nil)
	if tr := r.JSON(); r.Status != http.StatusOK || tr["delivered"] != true || tr["type"] != "webhook.test-v1" {
		t.Fatalf("test event: %d %s", r.Status, r.Body)
	}
	got := rcv.waitDelivered(t, 1, 5*time.Second, p.Logs.String)
	for _, e := range got {
		if e.Type != "webhook.test-v1" {
			t.Errorf("first event %+v, want webhook.test-v1", e)
		}
	}

	// Another organisation: the endpoint does not exist for it.
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, base}, {http.MethodPatch, base}, {http.MethodPost, base + "rotate-secret/"},
		{http.MethodPost, base + "test/"}, {http.MethodGet, base + "attempts/"},
	} {
		var body any
		if c.method == http.MethodPatch {
			body = map[string]any{"enabled": false}
		}
		if r := p.As(other.Token, c.method, c.path, body); r.Status != http.StatusNotFound {
			t.Errorf("other organisation %s %s: %d %s", c.method, c.path, r.Status, r.Body)
		}
	}
	if r := p.As(other.Token, http.MethodGet, "/v1/data-import/webhooks/", nil); r.Status != http.StatusOK || string(r.Body) != "[]" {
		t.Errorf("other organisation's list: %d %s", r.Status, r.Body)
	}

	// Real events arrive; then a rotation: the old secret still verifies
	// (the receiver has not switched yet), and so does the new one.
	publish(t, p.Stack, "DEMO_ENERGY", "EXT-HOOK", 1)
	rcv.waitDelivered(t, 2, 15*time.Second, p.Logs.String)
	r = p.As(p.token, http.MethodPost, base+"rotate-secret/", nil)
	rotated := r.JSON()
	newSecret, _ := rotated["secret"].(string)
	if r.Status != http.StatusOK || newSecret == secret || !strings.HasPrefix(newSecret, "whsec_") || rotated["previous_secret_expires_at"] == nil {
		t.Fatalf("rotate: %d %s", r.Status, r.Body)
	}
	publish(t, p.Stack, "DEMO_ENERGY", "EXT-HOOK-OLD", 1)
	rcv.waitDelivered(t, 3, 15*time.Second, p.Logs.String)
	rcv.useSecret(t, newSecret)
	publish(t, p.Stack, "DEMO_ENERGY", "EXT-HOOK-NEW", 1)
	rcv.waitDelivered(t, 4, 15*time.Second, p.Logs.String)
	if _, bad, _ := rcv.stats(); len(bad) > 0 {
		t.Errorf("signatures that did not verify: %v", bad)
	}

	// Show: health and recent attempts; attempts paged and bounded.
	r = p.As(p.token, http.MethodGet, base, nil)
	shown := r.JSON()
	if atts, _ := shown["recent_attempts"].([]any); r.Status != http.StatusOK || len(atts) < 3 || shown["health"] == nil || shown["secret"] != nil {
		t.Errorf("show: %d %s", r.Status, r.Body)
	}
	if r := p.As(p.token, http.MethodGet, base+"attempts/?limit=2", nil); r.Status != http.StatusOK || strings.Count(string(r.Body), `"attempt"`) != 2 {
		t.Errorf("attempts?limit=2: %d %s", r.Status, r.Body)
	}
	if r := p.As(p.token, http.MethodGet, base+"attempts/?limit=1000", nil); r.Status != http.StatusBadRequest {
		t.Errorf("attempts?limit=1000: %d %s", r.Status, r.Body)
	}

	// Change: types checked, then disabled by the partner.
	if r := p.As(p.token, http.MethodPatch, base, map[string]any{"event_types": []string{"no.such-v1"}}); r.Status != http.StatusBadRequest ||
		!strings.Contains(string(r.Body), "event_types.0") {
		t.Errorf("patch with an unknown type: %d %s", r.Status, r.Body)
	}
	r = p.As(p.token, http.MethodPatch, base, map[string]any{"enabled": false})
	if j := r.JSON(); r.Status != http.StatusOK || j["enabled"] != false || j["disabled_reason"] != "disabled by the partner" {
		t.Errorf("disable: %d %s", r.Status, r.Body)
	}

	for _, action := range []string{"webhook.create", "webhook.rotate_secret", "webhook.update"} {
		if n := p.count(`SELECT count(*) FROM audit_log WHERE action = ? AND actor LIKE 'apikey:%' AND target = ?`, action, "webhook:"+strconv.FormatInt(id, 10)); n != 1 {
			t.Errorf("%d audit rows for %s by the partner's key, want 1", n, action)
		}
	}
	if n := p.count(`SELECT count(*) FROM audit_log WHERE after::text LIKE '%whsec_%'`); n != 0 {
		t.Errorf("%d audit rows hold a secret", n)
	}
}
