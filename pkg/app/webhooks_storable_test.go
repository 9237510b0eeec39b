package app_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// A receiver answering 200 with a NUL byte in its body (plainly, or because
// it answers in UTF-16) used to have its delivery sent again after every
// lease: Postgres refused the excerpt, so the attempt was never recorded (4
// deliveries in 12 s, 0 attempt rows). Each must get exactly one request and
// one attempt row, delivered, with a storable excerpt.
func TestWebhookAnswerWithNULIsRecordedOnce(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker(hookWorker(true), func(c *testutil.StackConfig) { c.WebhookTimeout = time.Second }) // lease: 2 s
	bodies := map[string][]byte{
		"nul":    []byte("ok\x00"),
		"utf16":  {0xff, 0xfe, 'o', 0, 'k', 0}, // "ok" in UTF-16LE with its byte-order mark
		"binary": append([]byte{0xc3, 0x28, 0x00, 0xed, 0xa0, 0x80}, make([]byte, 3000)...),
	}
	hits := map[string]*atomic.Int32{}
	ids := map[string]int64{}
	for name, body := range bodies {
		n := &atomic.Int32{}
		hits[name] = n
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			n.Add(1)
			w.Header().Set("Content-Type", "text/plain; charset=utf-16")
			_, _ = w.Write(body)
		}))
		t.Cleanup(srv.Close)
		ids[name], _ = addHook(t, p.Stack, "Demo Partner", srv.URL)
	}
	publish(t, p.Stack, "DEMO_ENERGY", "EXT-NUL", 1)

	deadline := time.Now().Add(15 * time.Second)
	for name, id := range ids {
		for p.count(`SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = ? AND state = 'delivered'`, id) != 1 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not delivered: %d requests, %d attempt rows\n%s", name, hits[name].Load(),
					p.count(`SELECT count(*) FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = ?`, id), p.Logs.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	time.Sleep(5 * time.Second) // two leases: a delivery left unrecorded would be claimed again by now
	for name, id := range ids {
		attempts := p.count(`SELECT count(*) FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
			WHERE d.endpoint_id = ? AND a.status = 200 AND a.response_excerpt IS NOT NULL`, id)
		if got := hits[name].Load(); got != 1 || attempts != 1 {
			t.Errorf("%s: %d requests and %d attempt rows with an excerpt, want 1 and 1", name, got, attempts)
		}
	}
}
