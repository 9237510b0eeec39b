package console_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/app"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// TestReplicaHygiene is the defect of issue #32 item 6: a worker started
// without STRIPE_API_KEY beside one with it, behind an API that accepts
// STRIPE. The console lists 1 API and 2 worker processes (not one row per
// asynq server), flags the worker without the vendor and names it; that
// worker's /readyz is 503 naming STRIPE while the other's is 200; busy is
// non-zero on the worker holding creations; and no account naming STRIPE
// fails (before, those that landed on the bare worker failed for good with
// `"STRIPE" is not a valid choice`).
func TestReplicaHygiene(t *testing.T) {
	mock := testutil.NewStripeMock(t)
	proxy := testutil.NewFaultProxy(t, mock.URL)
	st, srv := consoleStack(t, testutil.FastPipeline, testutil.WithStripe(proxy.URL))
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	if _, err := st.DB.CreateTeam(t.Context(), "Migrations"); err != nil {
		t.Fatal(err)
	}
	good := st.StartWorker()
	bare := st.StartWorker(func(c *testutil.StackConfig) { c.StripeAPIKey = "" })

	// Readiness on each worker's probe port.
	if code, body := probe(t, good); code != http.StatusOK {
		t.Fatalf("worker with STRIPE: /readyz %d %s", code, body)
	}
	code, body := probe(t, bare)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "STRIPE") || !strings.Contains(body, `"payment_vendors":"unavailable"`) {
		t.Fatalf("worker without STRIPE: /readyz %d %s", code, body)
	}

	b := loggedIn(t, st, srv.URL, "olivia")
	rowRe := regexp.MustCompile(`(?s)<tr data-instance="[^"]+" data-role="(api|worker)"[^>]*>(.*?)</tr>`)
	live := b.do(http.MethodGet, "/overview/live", nil).Body
	rows := rowRe.FindAllStringSubmatch(live, -1)
	roles := map[string]int{}
	var flagged []string
	for _, r := range rows {
		roles[r[1]]++
		if strings.Contains(r[2], "missing STRIPE") {
			flagged = append(flagged, r[1]+": "+r[2])
		}
	}
	if len(rows) != 3 || roles["api"] != 1 || roles["worker"] != 2 {
		t.Fatalf("processes %v, want 1 api and 2 workers:\n%s", roles, live)
	}
	if !strings.Contains(live, `<span id="workers">2</span>`) {
		t.Errorf("the card does not count 2 worker processes:\n%s", live)
	}
	if len(flagged) != 1 || !strings.HasPrefix(flagged[0], "worker: ") || !strings.Contains(flagged[0], "no: the API accepts payment vendor STRIPE") {
		t.Fatalf("flagged rows %q, want the bare worker's alone, not ready naming STRIPE", flagged)
	}

	// Creations naming STRIPE, some landing on the bare worker: slow vendor
	// answers keep them in flight long enough for heartbeats to see them.
	proxy.FailAlways(testutil.Fault{Delay: 1200 * time.Millisecond})
	raw, err := testutil.ReadRepoFile("pkg/dataimport/testdata/account_valid.json")
	if err != nil {
		t.Fatal(err)
	}
	var created, tried atomic.Int64
	var failures sync.Map
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for l := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ext := "EXT-R" + strconv.Itoa(l) + "-" + strconv.Itoa(i)
				var acc map[string]any
				_ = json.Unmarshal(raw, &acc)
				acc["external_account_number"] = ext
				acc["payment_instructions"] = []any{map[string]any{"type": "CARD", "reference": "pm_card_visa", "vendor": "STRIPE"}}
				if r := st.As(ten.Token, http.MethodPost, "/v1/data-import/account-import-process/create-or-update/", acc); r.Status != http.StatusCreated {
					failures.Store(ext, "stage: "+strconv.Itoa(r.Status)+" "+string(r.Body))
					return
				}
				tried.Add(1)
				r := st.As(ten.Token, http.MethodPost, "/v1/data-import/account-import-process/process/", map[string]any{
					"external_account_number": ext, "import_supplier_code": "DEMO_ENERGY", "operations_team_name": "Migrations"})
				if r.Status != http.StatusCreated {
					failures.Store(ext, strconv.Itoa(r.Status)+" "+string(r.Body))
					continue
				}
				created.Add(1)
			}
		}()
	}
	busyRe := regexp.MustCompile(`<td class="busy">(\d+)</td>`)
	deadline := time.Now().Add(30 * time.Second)
	sawBusy := false
	for !sawBusy && time.Now().Before(deadline) {
		time.Sleep(300 * time.Millisecond)
		page := b.do(http.MethodGet, "/overview/live", nil).Body
		total := 0
		for _, m := range busyRe.FindAllStringSubmatch(page, -1) {
			n, _ := strconv.Atoi(m[1])
			total += n
		}
		if m := regexp.MustCompile(`<td id="busy-total">(\d+)</td>`).FindStringSubmatch(page); m != nil && total > 0 {
			if m[1] != strconv.Itoa(total) {
				t.Errorf("busy total %s, rows add up to %d", m[1], total)
			}
			sawBusy = true
		}
	}
	close(stop)
	wg.Wait()
	if !sawBusy {
		t.Errorf("no worker reported busy slots while creations were in flight")
	}
	failures.Range(func(k, v any) bool {
		t.Errorf("%s did not succeed: %s", k, v)
		return true
	})
	if created.Load() == 0 || created.Load() != tried.Load() {
		t.Errorf("created %d of %d accounts naming STRIPE", created.Load(), tried.Load())
	}
	t.Logf("created %d accounts naming STRIPE across both workers", created.Load())
}

func probe(t *testing.T, w *app.Worker) (int, string) {
	t.Helper()
	srv := httptest.NewServer(w.Probes)
	defer srv.Close()
	r, err := http.Get(srv.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	raw, _ := io.ReadAll(r.Body)
	return r.StatusCode, string(raw)
}
