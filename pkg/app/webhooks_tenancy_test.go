package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// Organisation B never receives A's events; A's endpoint hanging on every
// request (with more events than there are delivery workers) does not
// delay B's deliveries: the per-endpoint in-flight bound keeps workers free.
func TestWebhookTenancyAndAHangingEndpoint(t *testing.T) {
	st := testutil.NewStack(t, testutil.FastPipeline)
	st.Supplier("ALPHA")
	st.Supplier("DEMO_ENERGY")
	st.Tenant("Org A", "ALPHA")
	st.Tenant("Org B", "DEMO_ENERGY")
	hang, b := newHookReceiver(t), newHookReceiver(t)
	hang.answer.Store(0)
	_, secretA := addHook(t, st, "Org A", hang.URL)
	_, secretB := addHook(t, st, "Org B", b.URL)
	hang.useSecret(t, secretA)
	b.useSecret(t, secretB)
	st.StartWorker(hookWorker(true), func(c *testutil.StackConfig) {
		c.WebhookConcurrency, c.WebhookEndpointConcurrency = 4, 2
		c.WebhookTimeout = 12 * time.Second // without the bound, B would wait for these
	})
	t.Cleanup(hang.stopHanging) // before the worker's shutdown

	publish(t, st, "ALPHA", "EXT-A", 20)
	// A's attempts are in flight (hanging) before B has anything.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if req, _, _ := hang.stats(); req >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A's endpoint got no request:\n%s", st.Logs.String())
		}
	}
	start := time.Now()
	extB := publish(t, st, "DEMO_ENERGY", "EXT-B", 10)
	got := b.waitDelivered(t, 10, 8*time.Second, st.Logs.String)
	t.Logf("B's 10 events arrived in %s while A's endpoint hangs", time.Since(start).Round(time.Millisecond))
	want := map[string]bool{}
	for _, e := range extB {
		want[e] = true
	}
	for _, e := range got {
		if !want[e.Data.ExternalAccountNumber] || e.Data.ImportSupplier != "DEMO_ENERGY" {
			t.Errorf("B received %+v", e)
		}
	}
	if req, _, _ := hang.stats(); req > 2 {
		t.Errorf("A's endpoint has %d requests in flight, bound is 2", req)
	}
	hang.mu.Lock()
	defer hang.mu.Unlock()
	for id, items := range hang.byID {
		if items[0].Data.ImportSupplier != "ALPHA" || !strings.HasPrefix(items[0].Data.ExternalAccountNumber, "EXT-A") {
			t.Errorf("A received %s: %+v", id, items[0])
		}
	}
}
