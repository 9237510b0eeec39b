package app_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/webhook"
)

// Loopback and private targets are refused at registration and, for an
// endpoint whose address changed after it (DNS rebinding, stood in for by a
// row written past the guard), when the worker dials; WEBHOOK_ALLOW_PRIVATE
// permits them.
func TestWebhookPrivateTargetsRefused(t *testing.T) {
	p := newPipeline(t)
	for _, url := range []string{"https://127.0.0.1/hook", "https://10.1.2.3/hook", "https://[::1]/hook", "http://8.8.8.8/hook",
		"https://169.254.169.254/latest/meta-data/", "https://localhost/hook"} {
		out, err := importctlBin(t, p.Stack, nil, "webhook", "add", "--org", "Demo Partner", "--url", url)
		if err == nil || !strings.Contains(out, "webhook target refused") {
			t.Errorf("%s registered: %v %s", url, err, out)
		}
	}
	if n := p.count(`SELECT count(*) FROM webhook_endpoints`); n != 0 {
		t.Fatalf("%d endpoints written for refused URLs", n)
	}
	if id, _ := addHook(t, p.Stack, "Demo Partner", "https://10.1.2.3/hook"); id == 0 { // WEBHOOK_ALLOW_PRIVATE=true
		t.Fatal("no id")
	}
	must(t, p.DB.SetWebhookEnabled(context.Background(), 1, false, "")) // it would only time out

	rcv := newHookReceiver(t)
	secret, err := webhook.NewSecret()
	must(t, err)
	rcv.useSecret(t, secret)
	e, err := p.DB.CreateWebhookEndpoint(context.Background(), postgres.NewWebhookEndpoint{Organisation: "Demo Partner", URL: rcv.URL, Secret: secret})
	must(t, err)
	p.StartWorker(hookWorker(false))
	publish(t, p.Stack, "DEMO_ENERGY", "EXT-P", 1)
	deadline := time.Now().Add(15 * time.Second)
	for p.count(`SELECT count(*) FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
		WHERE d.endpoint_id = ? AND a.error LIKE '%webhook target refused%not a public address%'`, e.ID) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no refused dial in the log:\n%s", p.Logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if req, _, _ := rcv.stats(); req != 0 {
		t.Errorf("the loopback receiver got %d requests", req)
	}
	if n := p.count(`SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = ? AND state = 'pending' AND attempts >= 2`, e.ID); n != 1 {
		t.Errorf("refused delivery not pending for a retry (%d)", n)
	}
}

// A 3xx is a failed attempt, not followed; a 410 disables the endpoint
// (with its reason) and nothing more is sent to it.
func TestWebhookRedirectNotFollowedAndGoneDisables(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker(hookWorker(true))
	var followed atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { followed.Add(1) }))
	defer target.Close()
	var redirects atomic.Int32
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirects.Add(1)
		http.Redirect(w, r, target.URL, http.StatusFound)
	}))
	defer redirect.Close()
	gone := newHookReceiver(t)
	gone.answer.Store(http.StatusGone)
	redirID, _ := addHook(t, p.Stack, "Demo Partner", redirect.URL)
	goneID, secret := addHook(t, p.Stack, "Demo Partner", gone.URL)
	gone.useSecret(t, secret)

	publish(t, p.Stack, "DEMO_ENERGY", "EXT-R", 3)
	deadline := time.Now().Add(15 * time.Second)
	for redirects.Load() < 6 || p.count(`SELECT count(*) FROM webhook_endpoints WHERE id = ? AND NOT enabled`, goneID) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("redirects %d; endpoints %+v", redirects.Load(), p.count(`SELECT count(*) FROM webhook_endpoints WHERE NOT enabled`))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if followed.Load() != 0 {
		t.Errorf("a redirect was followed %d times", followed.Load())
	}
	if n := p.count(`SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = ? AND state = 'pending' AND last_status = 302`, redirID); n != 3 {
		t.Errorf("%d redirected deliveries pending with status 302, want 3", n)
	}
	es, err := p.DB.WebhookEndpoints(context.Background(), "Demo Partner")
	must(t, err)
	for _, e := range es {
		if e.ID == goneID && (e.Enabled || e.DisabledReason == nil || !strings.Contains(*e.DisabledReason, "410")) {
			t.Errorf("410 endpoint: enabled %t, reason %v", e.Enabled, e.DisabledReason)
		}
		if e.ID == redirID && !e.Enabled {
			t.Error("the redirecting endpoint was disabled")
		}
	}
	// The disable is audited once (actor system), however many 410s raced.
	if n := p.count(`SELECT count(*) FROM audit_log WHERE action = 'webhook.disable' AND actor = 'system' AND target = ?
		AND after->>'disabled_reason' LIKE '%410 Gone%'`, fmt.Sprintf("webhook:%d", goneID)); n != 1 {
		t.Errorf("%d audit rows for the 410 disable, want 1", n)
	}
	// Nothing more goes to the disabled endpoint.
	time.Sleep(300 * time.Millisecond)
	before, _, _ := gone.stats()
	publish(t, p.Stack, "DEMO_ENERGY", "EXT-G", 2)
	time.Sleep(time.Second)
	if after, _, _ := gone.stats(); after != before {
		t.Errorf("a disabled endpoint got %d more requests", after-before)
	}
	if list, err := importctlBin(t, p.Stack, nil, "webhook", "list", "--org", "Demo Partner"); err != nil || !strings.Contains(list, "410 Gone") {
		t.Errorf("list: %v\n%s", err, list)
	}
}
