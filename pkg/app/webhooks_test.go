package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// 500 accounts created by a worker process while the receiver answers 503;
// then the worker is SIGKILLed and Redis flushed with deliveries pending, and
// a new worker takes over while the receiver answers 200. The receiver ends
// with exactly one complete event per account (de-duplicated by
// webhook-id), every request signed as the library verifies, and Postgres
// holds every delivery as delivered.
func TestWebhooksDeliverEveryAccountThrough503sKillAndFlush(t *testing.T) {
	const n = 500
	p := newPipeline(t)
	rcv := newHookReceiver(t)
	rcv.downFor = 4 * time.Second // from its first request on
	id, secret := addHook(t, p.Stack, "Demo Partner", rcv.URL+"/hooks", "--events", "import_process.complete-v1")
	rcv.useSecret(t, secret)

	ids := p.stageMany(0, n)
	env := []string{"WORKER_CONCURRENCY=4", "RECONCILE_EVERY=200ms", "RECONCILE_GRACE=1s", "SLOT_LEASE=10s",
		"WEBHOOK_ALLOW_PRIVATE=true", "WEBHOOK_RETRY_BASE=50ms", "WEBHOOK_TIMEOUT=2s", "SHUTDOWN_TIMEOUT=2s"}
	w := p.StartProcess("worker", env...)
	p.createAsync(ids)
	if t.Failed() {
		t.FailNow()
	}

	// Kill the worker and flush Redis while deliveries are pending: the
	// retries of the 503s are scheduled seconds out.
	deadline := time.Now().Add(60 * time.Second)
	for p.count(`SELECT count(*) FROM webhook_deliveries WHERE state = 'delivered'`) < n/4 {
		if time.Now().After(deadline) {
			t.Fatalf("no deliveries:\n%s", w.Logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	w.Kill()
	must(t, p.API.Redis.FlushAll(context.Background()).Err())
	pending := p.count(`SELECT count(*) FROM webhook_deliveries WHERE state = 'pending'`)
	completed := p.count(`SELECT count(*) FROM import_processes WHERE status = 'COMPLETED'`)
	undispatched := completed - p.count(`SELECT count(*) FROM webhook_deliveries`)
	if pending == 0 && undispatched == 0 {
		t.Fatal("nothing pending at the kill; the test proves nothing")
	}
	t.Logf("killed the worker and flushed Redis with %d deliveries pending, %d complete events not yet dispatched, %d/%d accounts created",
		pending, undispatched, completed, n)
	w2 := p.StartProcess("worker", env...)
	p.waitCompleted(n, 60*time.Second)

	got := rcv.waitDelivered(t, n, 30*time.Second, w2.Logs.String)
	byAccount := map[string][]string{}
	for hookID, e := range got {
		if e.Type != "import_process.complete-v1" || e.Data.Status != "PROCESSED" || e.Data.PlatformAccountNumber == nil {
			t.Errorf("event %s: %+v", hookID, e)
		}
		byAccount[e.Data.ExternalAccountNumber] = append(byAccount[e.Data.ExternalAccountNumber], hookID)
	}
	for _, ext := range ids {
		if len(byAccount[ext]) != 1 {
			t.Errorf("account %s: complete events %v, want exactly one", ext, byAccount[ext])
		}
	}
	if len(byAccount) != n {
		t.Errorf("%d accounts notified, want %d", len(byAccount), n)
	}
	requests, bad, answered := rcv.stats()
	if len(bad) > 0 {
		t.Errorf("%d of %d requests failed signature verification: %v", len(bad), requests, bad[:min(5, len(bad))])
	}
	if answered[http.StatusServiceUnavailable] == 0 {
		t.Error("the receiver never answered 503: the retry path was not exercised")
	}
	// The receiver may have answered before the worker recorded it; an
	// attempt the kill cut short is sent again once its lease ends.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		c := p.count(`SELECT count(*) FROM webhook_deliveries WHERE state = 'delivered' AND endpoint_id = ?`, id)
		if c == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deliveries delivered in Postgres, want %d", c, n)
		}
	}
	if c := p.count(`SELECT count(*) FROM webhook_attempts WHERE status = 503`); c == 0 {
		t.Error("no 503 attempt in the log")
	}
	t.Logf("%d requests: %v", requests, answered)
	testutil.Tally(testutil.FaultsSurvived, 2)
}

// A dry run sends its dry-run event only; work that rolled back sends
// nothing. Replay sends the same event ids again; a rotated secret signs
// what follows; the log shows the attempts.
func TestWebhookDryRunRolledBackReplayRotateLog(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker(hookWorker(true))
	rcv := newHookReceiver(t)
	id, secret := addHook(t, p.Stack, "Demo Partner", rcv.URL)
	rcv.useSecret(t, secret)
	start := time.Now().Add(-time.Second)

	p.stage("EXT-DRY")
	if r := p.create("EXT-DRY", map[string]any{"dry_run": true}); r.Status != http.StatusBadRequest || r.JSON()["code"] != "dry_run_rolled_back" {
		t.Fatalf("dry run: %d %s", r.Status, r.Body)
	}
	p.stage("EXT-ROLLED")
	tx, err := sqlDB(t, p.Stack).BeginTx(context.Background(), nil)
	must(t, err)
	_, err = tx.Exec(insertEventSQL, processID(t, p.Stack, "EXT-ROLLED"), "EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED", `{"attempt": 1, "platform_account_number": "A-00000001"}`)
	must(t, err)
	must(t, tx.Rollback())

	// A marker committed after everything above: once it is scheduled, the
	// dispatcher's cursor has passed whatever the work above published.
	publish(t, p.Stack, "DEMO_ENERGY", "EXT-MARK", 1)
	got := rcv.waitDelivered(t, 2, 15*time.Second, p.Logs.String)
	if len(got) != 2 || p.count(`SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = ?`, id) != 2 {
		t.Fatalf("received %d events, want the dry run's and the marker's only: %+v", len(got), got)
	}
	var dryID string
	for hid, e := range got {
		switch e.Data.ExternalAccountNumber {
		case "EXT-MARK-0000":
		case "EXT-DRY":
			dryID = hid
			if e.Type != "import_process.dry_run_complete-v1" || e.Data.Status != "DRY_RUN_SUCCEEDED" || e.Data.PlatformAccountNumber != nil {
				t.Errorf("dry run's event %+v", e)
			}
		default:
			t.Errorf("event %+v", e)
		}
	}
	if dryID == "" {
		t.Fatal("no dry-run event")
	}

	// Rotate: deliveries from now on verify with the new secret only.
	out, err := importctlBin(t, p.Stack, nil, "webhook", "rotate-secret", itoa(id), "--json")
	if err != nil {
		t.Fatalf("rotate-secret: %v %s", err, out)
	}
	newSecret := jsonField(t, out, "secret")
	if newSecret == secret || !strings.HasPrefix(newSecret, "whsec_") {
		t.Fatalf("rotated secret %q", newSecret)
	}
	rcv.useSecret(t, newSecret)

	// Replay: the same event id arrives again, signed with the new secret.
	if out, err := importctlBin(t, p.Stack, nil, "webhook", "replay", itoa(id), "--since", start.UTC().Format(time.RFC3339)); err != nil ||
		!strings.Contains(out, "2 events scheduled again") {
		t.Fatalf("replay: %v %s", err, out)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		rcv.mu.Lock()
		n := len(rcv.byID[dryID])
		rcv.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replayed event %s arrived %d times in all", dryID, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, bad, _ := rcv.stats(); len(bad) > 0 {
		t.Errorf("bad signatures: %v", bad)
	}
	out, err = importctlBin(t, p.Stack, nil, "webhook", "log", itoa(id))
	if err != nil || strings.Count(out, dryID) != 2 || !strings.Contains(out, "200") || !strings.Contains(out, "LATENCY") {
		t.Errorf("log: %v\n%s", err, out)
	}
	if _, err := importctlBin(t, p.Stack, nil, "webhook", "replay", itoa(id), "--since", "yesterday"); err == nil {
		t.Error("replay accepted --since yesterday")
	}
	if out, err := importctlBin(t, p.Stack, nil, "webhook", "log", "999999"); err == nil || !strings.Contains(out, "does not exist") {
		t.Errorf("log of an unknown endpoint: %v %s", err, out)
	}
}
