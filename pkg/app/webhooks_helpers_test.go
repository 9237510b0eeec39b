package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// hookReceiver is a real HTTP receiver: it answers with the status the
// test sets (0: hang until the request is cancelled), verifies every
// request's signature with the Standard Webhooks library and keeps what
// came, keyed by webhook-id.
type hookReceiver struct {
	*httptest.Server
	answer atomic.Int32
	// downFor: answer 503 for this long from the first request on.
	downFor time.Duration
	first   time.Time
	unhang  chan struct{} // closed by stopHanging
	once    sync.Once

	mu       sync.Mutex
	verifier *standardwebhooks.Webhook
	requests int
	badSigs  []string
	byID     map[string][]feedItem // every body that arrived, per webhook-id
	answered map[int]int           // status → count
	arrived  map[string]time.Time  // first 2xx per webhook-id
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	r := &hookReceiver{byID: map[string][]feedItem{}, answered: map[int]int{}, arrived: map[string]time.Time{}, unhang: make(chan struct{})}
	r.answer.Store(http.StatusOK)
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	t.Cleanup(r.stopHanging)
	return r
}

// stopHanging ends the hanging requests (with a 503), so that shutting the
// worker down does not wait for their timeout.
func (r *hookReceiver) stopHanging() { r.once.Do(func() { close(r.unhang) }) }

// useSecret sets the secret every later request must be signed with.
func (r *hookReceiver) useSecret(t *testing.T, secret string) {
	t.Helper()
	v, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	r.verifier = v
	r.mu.Unlock()
}

func (r *hookReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	status := int(r.answer.Load())
	r.mu.Lock()
	if r.first.IsZero() {
		r.first = time.Now()
	}
	if time.Since(r.first) < r.downFor {
		status = http.StatusServiceUnavailable
	}
	r.requests++
	id := req.Header.Get("webhook-id")
	var item feedItem
	if r.verifier == nil || r.verifier.Verify(body, req.Header) != nil {
		r.badSigs = append(r.badSigs, id)
	} else if err := json.Unmarshal(body, &item); err != nil || item.ID != id {
		r.badSigs = append(r.badSigs, id+" (body id "+item.ID+")")
	} else {
		r.byID[id] = append(r.byID[id], item)
	}
	if status == 0 {
		r.mu.Unlock()
		select { // hang
		case <-req.Context().Done():
		case <-r.unhang:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		return
	}
	r.answered[status]++
	if status/100 == 2 {
		if _, ok := r.arrived[id]; !ok {
			r.arrived[id] = time.Now()
		}
	}
	r.mu.Unlock()
	w.WriteHeader(status)
}

// delivered is the first body of every event the receiver answered 2xx.
func (r *hookReceiver) delivered() map[string]feedItem {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]feedItem{}
	for id := range r.arrived {
		out[id] = r.byID[id][0]
	}
	return out
}

func (r *hookReceiver) stats() (requests int, badSigs []string, answered map[int]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := map[int]int{}
	for k, v := range r.answered {
		a[k] = v
	}
	return r.requests, append([]string(nil), r.badSigs...), a
}

// waitDelivered waits until the receiver has n events answered 2xx.
func (r *hookReceiver) waitDelivered(t *testing.T, n int, within time.Duration, logs func() string) map[string]feedItem {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		got := r.delivered()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			req, bad, answered := r.stats()
			t.Fatalf("receiver has %d of %d events after %s (%d requests, answered %v, %d bad signatures)\n%s",
				len(got), n, within, req, answered, len(bad), logs())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// importctlBin runs the importctl binary on the stack's database with env.
func importctlBin(t *testing.T, st *testutil.Stack, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(testutil.Binary(t, "importctl"), args...)
	cmd.Env = append(append(os.Environ(), "DATABASE_URL="+st.Config.DatabaseURL, "WEBHOOK_ALLOW_PRIVATE=false"), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// addHook registers url for org through importctl (WEBHOOK_ALLOW_PRIVATE
// for the receiver on 127.0.0.1) and returns the endpoint id and secret.
func addHook(t *testing.T, st *testutil.Stack, org, url string, extra ...string) (int64, string) {
	t.Helper()
	out, err := importctlBin(t, st, []string{"WEBHOOK_ALLOW_PRIVATE=true"},
		append([]string{"webhook", "add", "--org", org, "--url", url, "--json"}, extra...)...)
	if err != nil {
		t.Fatalf("webhook add: %v\n%s", err, out)
	}
	var r struct {
		ID     int64  `json:"id"`
		Secret string `json:"secret"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.ID == 0 || !strings.HasPrefix(r.Secret, "whsec_") {
		t.Fatalf("webhook add printed %q (%v)", out, err)
	}
	return r.ID, r.Secret
}

// hookWorker is an in-process worker that may send to the receivers on
// 127.0.0.1, with a retry schedule scaled down 200 times (50 ms first).
func hookWorker(allowPrivate bool) testutil.StackOption {
	return func(c *testutil.StackConfig) {
		c.WebhookAllowPrivate = allowPrivate
		c.WebhookRetryBase = 50 * time.Millisecond
	}
}

// publish writes n published events (errors) for new processes of supplier
// in one transaction, as the pipeline's transactions do, and returns their
// external account numbers.
func publish(t *testing.T, st *testutil.Stack, supplier, prefix string, n int) []string {
	t.Helper()
	ctx := context.Background()
	tx, err := sqlDB(t, st).BeginTx(ctx, nil)
	must(t, err)
	defer func() { _ = tx.Rollback() }()
	var ext []string
	for i := range n {
		e := fmt.Sprintf("%s-%04d", prefix, i)
		var proc int64
		must(t, tx.QueryRowContext(ctx, `INSERT INTO import_processes (supplier_id, external_account_number, staged_version)
			SELECT id, $2, 1 FROM import_suppliers WHERE code = $1 RETURNING id`, supplier, e).Scan(&proc))
		_, err := tx.ExecContext(ctx, insertEventSQL, proc, "EVENT_ACCOUNT_IMPORT_PROCESS_ERRORED",
			`{"attempt": 1, "error": {"code": "server_error", "detail": "Boom.", "domain": "processing"}}`)
		must(t, err)
		ext = append(ext, e)
	}
	must(t, tx.Commit())
	return ext
}

func itoa(n int64) string { return fmt.Sprint(n) }

func jsonField(t *testing.T, out, field string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%q: %v", out, err)
	}
	s, _ := m[field].(string)
	return s
}
