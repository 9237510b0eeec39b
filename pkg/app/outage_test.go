package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// newPipelineOn is newPipeline with the database on a private Postgres
// server the test may stop and restart.
func newPipelineOn(t *testing.T, pg *testutil.PGServer) *pipeline {
	t.Helper()
	st := testutil.NewStackOn(t, pg.URL, testutil.FastPipeline)
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	if _, err := st.DB.CreateTeam(context.Background(), "Migrations"); err != nil {
		t.Fatal(err)
	}
	return &pipeline{Stack: st, token: ten.Token}
}

func (p *pipeline) waitCompletedAtLeast(n int64) {
	for p.count(`SELECT count(*) FROM import_processes WHERE status = 'COMPLETED'`) < n {
		time.Sleep(5 * time.Millisecond)
	}
}

func TestPostgresRestartMidBatch(t *testing.T) {
	pg := testutil.NewPGServer(t)
	p := newPipelineOn(t, pg)
	ids := p.stageMany(0, 300)
	p.StartWorker(func(c *testutilConfig) { c.WorkerConcurrency = 4 })
	p.createAsync(ids)
	p.waitCompletedAtLeast(30)

	pg.Stop()
	// While Postgres is down: 503 (retry later), never 500.
	r := p.As(p.token, http.MethodGet, "/v1/data-import/account-transfer-status/DEMO_ENERGY/EXT-0001/", nil)
	assertUnavailable(t, r)
	r = p.As(p.token, http.MethodPost, stagePath, p.account("EXT-0001"))
	assertUnavailable(t, r)
	if r := p.Request(http.MethodGet, "/readyz", nil); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("readyz with Postgres down: %d", r.Status)
	}
	time.Sleep(2 * time.Second)
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	p.waitCompleted(300, 90*time.Second)
	p.assertExactlyOnce(300)
	testutil.Tally(testutil.FaultsSurvived, 1)
}

func TestRedisRestartMidBatch(t *testing.T) {
	p := newPipeline(t)
	ids := p.stageMany(0, 300)
	p.StartWorker(func(c *testutilConfig) { c.WorkerConcurrency = 4 })
	p.createAsync(ids)
	p.waitCompletedAtLeast(30)

	p.Redis.Stop() // it keeps nothing on disk: the queue is gone with it
	// Status and staging need only Postgres and keep working.
	if r := p.As(p.token, http.MethodGet, "/v1/data-import/account-transfer-status/DEMO_ENERGY/EXT-0001/", nil); r.Status != http.StatusOK {
		t.Fatalf("status with Redis down: %d %s", r.Status, r.Body)
	}
	p.stage("EXT-LATE")
	// Creation needs the queue: 503, and nothing is left half-started.
	assertUnavailable(t, p.create("EXT-LATE", nil))
	if st := p.status("EXT-LATE"); st["status"] != "UNKNOWN" {
		t.Fatalf("a refused create left the account %v", st["status"])
	}
	if r := p.Request(http.MethodGet, "/readyz", nil); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("readyz with Redis down: %d", r.Status)
	}
	time.Sleep(time.Second)
	must(t, p.Redis.Start())
	if r := p.create("EXT-LATE", nil); r.Status != http.StatusCreated {
		t.Fatalf("create after Redis came back: %d %s", r.Status, r.Body)
	}
	p.waitCompleted(301, 90*time.Second)
	p.assertExactlyOnce(301)
	testutil.Tally(testutil.FaultsSurvived, 1)
}

func assertUnavailable(t *testing.T, r testutil.Response) {
	t.Helper()
	if r.Status != http.StatusServiceUnavailable || r.JSON()["code"] != "service_unavailable" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("want 503 service_unavailable with Retry-After, got %d %s", r.Status, r.Body)
	}
	testutil.Tally(testutil.RefusedCorrectly, 1)
}

// The API process is killed while partners wait on their creates. Partners
// retry (as the interface says for network errors) against a new API
// process; every account ends up created exactly once.
func TestAPIKilledWithCreatesWaiting(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the api binary")
	}
	p := newPipeline(t)
	ids := p.stageMany(0, 300)
	addr := testutil.FreeAddr(t)
	env := []string{"HTTP_ADDR=" + addr, "PROCESS_WAIT=60s", "SHUTDOWN_TIMEOUT=1s"}
	api := p.StartProcess("api", env...)
	base := "http://" + addr
	waitHTTP(t, base+"/readyz")

	var wg sync.WaitGroup
	var mu sync.Mutex
	cut := 0
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := postCreate(base, p.token, id); err != nil {
				mu.Lock()
				cut++
				mu.Unlock()
			}
		}()
		if id == ids[150] {
			// Half the creates are waiting on jobs no worker runs yet.
			time.Sleep(300 * time.Millisecond)
			api.Kill()
		}
	}
	wg.Wait()
	if cut == 0 {
		t.Fatal("no request was cut by the kill; the test proves nothing")
	}
	t.Logf("%d of 300 creates cut by the API kill", cut)

	p.StartProcess("api", env...)
	waitHTTP(t, base+"/readyz")
	p.StartWorker()
	retryStart := time.Now()
	retry := make(chan string)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range retry {
				for try := 0; ; try++ {
					status, err := postCreate(base, p.token, id)
					if err == nil && (status == http.StatusCreated || status == http.StatusBadRequest) {
						break
					}
					if try > 100 {
						t.Errorf("%s: %d %v", id, status, err)
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	for _, id := range ids {
		retry <- id
	}
	close(retry)
	wg.Wait()
	t.Logf("retries took %s", time.Since(retryStart))
	p.waitCompleted(300, 60*time.Second)
	p.assertExactlyOnce(300)
	testutil.Tally(testutil.FaultsSurvived, 1)
}

func postCreate(base, token, id string) (int, error) {
	body, _ := json.Marshal(map[string]any{"external_account_number": id, "import_supplier_code": "DEMO_ENERGY", "operations_team_name": "Migrations"})
	req, _ := http.NewRequest(http.MethodPost, base+createPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Token "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode == http.StatusBadRequest && out["code"] != "account_already_imported" {
		return resp.StatusCode, fmt.Errorf("create %s: %v", id, out)
	}
	return resp.StatusCode, nil
}

func waitHTTP(t *testing.T, url string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if r, err := http.Get(url); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return
			}
		}
	}
	t.Fatalf("%s never became ready", url)
}
