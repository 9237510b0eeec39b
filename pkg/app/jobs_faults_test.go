package app_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// jobBody is n account lines EXT-<from>… as NDJSON.
func (p *pipeline) jobBody(from, n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(p.jobAccountLine(fmt.Sprintf("EXT-%04d", from+i)))
		b.WriteString("\n")
	}
	return b.String()
}

const jobQuery = "import_supplier=DEMO_ENERGY&operations_team_name=Migrations"

// waitCounter polls the job until counter reaches at least n.
func (p *pipeline) waitCounter(token string, id int64, counter string, n int64, within time.Duration) jobView {
	p.TB.Helper()
	deadline := time.Now().Add(within)
	for {
		v := p.job(token, id)
		if v.Counters[counter] >= n {
			return v
		}
		if time.Now().After(deadline) {
			p.TB.Fatalf("job %d: %s = %d after %s, want ≥ %d (%s)", id, counter, v.Counters[counter], within, n, v.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// assertJobAccountsOnce checks the job's n accounts exist exactly once.
func (p *pipeline) assertJobAccountsOnce(n int64) {
	p.TB.Helper()
	for q, want := range map[string]int64{
		`SELECT count(*) FROM accounts`:                                    n,
		`SELECT count(DISTINCT platform_account_number) FROM accounts`:     n,
		`SELECT count(DISTINCT import_process_id) FROM accounts`:           n,
		`SELECT count(*) FROM import_processes WHERE status = 'COMPLETED'`: n,
		`SELECT count(*) FROM import_attempts WHERE outcome = 'COMPLETED'`: n,
		`SELECT count(*) FROM import_process_versions`:                     n,
		`SELECT count(*) FROM statements`:                                  n,
	} {
		if got := p.count(q); got != want {
			p.TB.Errorf("%s = %d, want %d", q, got, want)
		}
	}
}

// TestJobUploadAPIKilledRetried: the API process is SIGKILLed while it
// receives an upload. Nothing of the body is kept and nothing is processed;
// the partner retries with the same Idempotency-Key against a new API
// process (409 while the dead upload's heartbeat is fresh, then the job is
// taken over), and every account is created once.
func TestJobUploadAPIKilledRetried(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the api binary")
	}
	p := newPipeline(t)
	addr := testutil.FreeAddr(t)
	env := []string{"HTTP_ADDR=" + addr, "SHUTDOWN_TIMEOUT=1s"}
	api := p.StartProcess("api", env...)
	base := "http://" + addr
	waitHTTP(t, base+"/readyz")
	body := p.jobBody(0, 300)
	lines := strings.SplitAfter(body, "\n")

	upload := func(r io.Reader) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, base+jobsURL+"?"+jobQuery, r)
		req.Header.Set("Content-Type", "application/x-ndjson")
		req.Header.Set("Authorization", "Token "+p.token)
		req.Header.Set("Idempotency-Key", "upload-1")
		return http.DefaultClient.Do(req)
	}
	pr, pw := io.Pipe()
	result := make(chan error, 1)
	go func() {
		resp, err := upload(pr)
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("upload answered %d despite the kill", resp.StatusCode)
		}
		result <- err
	}()
	// Half the body is in when the API dies.
	for _, l := range lines[:150] {
		if _, err := io.WriteString(pw, l); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); p.count(`SELECT n_received FROM import_jobs`) < 150; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the upload's heartbeat never showed 150 lines")
		}
	}
	api.Kill()
	_ = pw.CloseWithError(io.ErrClosedPipe)
	if err := <-result; err == nil || strings.Contains(err.Error(), "answered") {
		t.Fatalf("upload: %v", err)
	}
	if n := p.count(`SELECT count(*) FROM import_job_records`); n != 0 {
		t.Fatalf("%d lines of an unfinished upload were kept", n)
	}
	if n := p.count(`SELECT count(*) FROM import_jobs WHERE state = 'RECEIVING'`); n != 1 {
		t.Fatalf("%d jobs RECEIVING after the kill", n)
	}

	p.StartProcess("api", env...)
	waitHTTP(t, base+"/readyz")
	p.StartWorker()
	// The dead upload's heartbeat is still fresh: 409, retry later.
	resp, err := upload(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sawInUse := resp.StatusCode == http.StatusConflict
	for deadline := time.Now().Add(30 * time.Second); resp.StatusCode == http.StatusConflict; time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			t.Fatal("the retry never took the upload over")
		}
		if resp, err = upload(strings.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if !sawInUse || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("retry: first 409 %v, then %d", sawInUse, resp.StatusCode)
	}
	// A further retry is a replay of the same job.
	resp, err = upload(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("second retry: %d %v", resp.StatusCode, resp.Header)
	}
	// The same key with another body is refused, not replayed; the same
	// NDJSON sent gzipped is the same upload.
	resp, err = upload(strings.NewReader(strings.Join(lines[:299], "")))
	if err != nil {
		t.Fatal(err)
	}
	reused, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(reused), `"idempotency_key_reused"`) {
		t.Fatalf("same key, another body: %d %s", resp.StatusCode, reused)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = io.WriteString(zw, body)
	must(t, zw.Close())
	req, _ := http.NewRequest(http.MethodPost, base+jobsURL+"?"+jobQuery, &gz)
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("Content-Encoding", "gzip")
	req.Header.Set("Authorization", "Token "+p.token)
	req.Header.Set("Idempotency-Key", "upload-1")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("same body gzipped: %d %v", resp.StatusCode, resp.Header)
	}
	if n := p.count(`SELECT count(*) FROM import_jobs`); n != 1 {
		t.Fatalf("%d jobs after retries, want 1", n)
	}
	id := int64(p.count(`SELECT id FROM import_jobs`))
	v := p.waitJob(p.token, id, time.Minute)
	checkCounters(t, v, map[string]int64{"received": 300, "created": 300})
	p.assertJobAccountsOnce(300)
	testutil.Tally(testutil.FaultsSurvived, 1)
}

// TestJobSurvivesWorkerKillAndRedisFlush: the worker running a job is
// SIGKILLed, then Redis is flushed while another worker runs it; the job
// resumes from Postgres each time and completes with exact counters, every
// account created once, never more in progress than the cluster-wide cap.
func TestJobSurvivesWorkerKillAndRedisFlush(t *testing.T) {
	if testing.Short() {
		t.Skip("runs worker binaries")
	}
	p := newPipeline(t)
	ctx := context.Background()
	const capN = 10
	must(t, p.DB.SetConcurrencyLimit(ctx, capN))
	const n = 600
	id := acceptedJob(t, p.postJob(p.token, jobQuery, strings.NewReader(p.jobBody(0, n)), false))
	env := []string{"WORKER_CONCURRENCY=4", "RECONCILE_EVERY=200ms", "RECONCILE_GRACE=1s", "SLOT_LEASE=10s", "JOB_LEASE=2s"}
	stop := make(chan struct{})
	defer close(stop)
	var maxSeen atomic.Int64
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			var k int64
			if p.DB.Gorm().Raw(`SELECT count(*) FROM import_processes WHERE v2_status = 'IN_PROGRESS'`).Scan(&k).Error == nil && k > maxSeen.Load() {
				maxSeen.Store(k)
			}
		}
	}()

	w := p.StartProcess("worker", env...)
	p.waitCounter(p.token, id, "created", 60, 60*time.Second)
	w.Kill()
	killedAt := p.job(p.token, id).Counters["created"]
	if killedAt >= n {
		t.Fatal("the job finished before the kill; the test proves nothing")
	}
	t.Logf("killed the worker with %d/%d created", killedAt, n)
	p.StartProcess("worker", env...)
	p.waitCounter(p.token, id, "created", killedAt+100, 60*time.Second)
	must(t, p.API.Redis.FlushAll(ctx).Err())
	flushedAt := p.job(p.token, id).Counters["created"]
	if flushedAt >= n {
		t.Fatal("the job finished before the flush; the test proves nothing")
	}
	t.Logf("flushed Redis with %d/%d created", flushedAt, n)
	v := p.waitJob(p.token, id, 2*time.Minute)
	if v.State != "COMPLETED" {
		t.Fatalf("job %s", v.State)
	}
	checkCounters(t, v, map[string]int64{"received": n, "created": n})
	p.assertJobAccountsOnce(n)
	if maxSeen.Load() > capN {
		t.Errorf("%d accounts in progress at once under a cap of %d", maxSeen.Load(), capN)
	}
	if got := len(p.jobResults(p.token, id, "created")); got != n {
		t.Errorf("%d created results, want %d", got, n)
	}
	testutil.Tally(testutil.FaultsSurvived, 2)
}

// TestJobCancelMidJob: once the cancel is answered no account of the job
// is created any more; what was created stays and the counters add up.
func TestJobCancelMidJob(t *testing.T) {
	p := newPipeline(t)
	must(t, p.DB.SetConcurrencyLimit(context.Background(), 5))
	p.StartWorker()
	const n = 500
	id := acceptedJob(t, p.postJob(p.token, jobQuery, strings.NewReader(p.jobBody(0, n)), false))
	p.waitCounter(p.token, id, "created", 30, time.Minute)
	r := p.As(p.token, http.MethodPost, jobsURL+strconv.FormatInt(id, 10)+"/cancel/", nil)
	answered := time.Now()
	if r.Status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	var v jobView
	r.Decode(&v)
	accounts := p.count(`SELECT count(*) FROM accounts`)
	if v.State != "CANCELLED" || accounts >= n {
		t.Fatalf("cancel answered %s with %d/%d accounts", v.State, accounts, n)
	}
	time.Sleep(2 * time.Second) // a worker that ignored the cancel would create more now
	if after := p.count(`SELECT count(*) FROM accounts`); after != accounts {
		t.Fatalf("%d accounts when the cancel answered, %d two seconds later", accounts, after)
	}
	var late int64
	must(t, p.DB.Gorm().Raw(`SELECT count(*) FROM accounts a JOIN import_attempts t ON t.process_id = a.import_process_id
		WHERE t.outcome = 'COMPLETED' AND t.finished_at > ?`, answered).Scan(&late).Error)
	if late != 0 {
		t.Fatalf("%d accounts committed after the cancel answered", late)
	}
	v = p.job(p.token, id)
	if v.State != "CANCELLED" {
		t.Fatalf("job %s after cancel", v.State)
	}
	checkCounters(t, v, map[string]int64{"received": n, "created": accounts, "cancelled": n - accounts})
	if got := p.count(`SELECT count(*) FROM import_processes WHERE status = 'IN_PROGRESS'`); got != 0 {
		t.Fatalf("%d processes still in progress after the cancel", got)
	}
	// A second cancel changes nothing.
	r = p.As(p.token, http.MethodPost, jobsURL+strconv.FormatInt(id, 10)+"/cancel/", nil)
	if r.Status != http.StatusOK || r.JSON()["state"] != "CANCELLED" {
		t.Fatalf("second cancel: %d %s", r.Status, r.Body)
	}
}

// TestJobBadAccountFailsAlone: an account Postgres refuses (a trigger
// stands in for any constraint validation missed) sits in a multi-account
// transaction; it fails alone with the refusal, its neighbours are created.
func TestJobBadAccountFailsAlone(t *testing.T) {
	p := newPipeline(t)
	must(t, p.DB.Gorm().Exec(`CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.external_account_number = 'EXT-0075' THEN
				RAISE EXCEPTION 'poisoned account' USING ERRCODE = 'check_violation', TABLE = 'accounts';
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER poison BEFORE INSERT ON accounts FOR EACH ROW EXECUTE FUNCTION poison();`).Error)
	p.StartWorker()
	const n = 150
	id := acceptedJob(t, p.postJob(p.token, jobQuery, strings.NewReader(p.jobBody(0, n)), false))
	v := p.waitJob(p.token, id, time.Minute)
	checkCounters(t, v, map[string]int64{"received": n, "created": n - 1, "failed": 1})
	failed := p.jobResults(p.token, id, "failed")
	if len(failed) != 1 || failed[0].Line != 76 || failed[0].ExternalAccountNumber != "EXT-0075" || failed[0].Code != "data_refused" {
		t.Fatalf("failed results: %+v", failed)
	}
	for _, ext := range []string{"EXT-0074", "EXT-0076"} {
		if p.count(`SELECT count(*) FROM accounts WHERE external_account_number = ?`, ext) != 1 {
			t.Errorf("neighbour %s not created", ext)
		}
	}
	// Accounts were created many to a transaction (rows of one
	// transaction share xmin), not one by one.
	txs := p.count(`SELECT count(DISTINCT xmin::text) FROM accounts`)
	if txs >= n-1 {
		t.Fatalf("%d accounts in %d transactions: no multi-account transaction", n-1, txs)
	}
	t.Logf("%d accounts in %d transactions", n-1, txs)
	if st := p.status("EXT-0075"); st["status"] != "UNKNOWN" {
		t.Errorf("v1 status of the refused account: %v", st)
	}
}

// TestJobTenancy: organisation B, even granted the same supplier, cannot
// read, list, cancel or download A's job.
func TestJobTenancy(t *testing.T) {
	p := newPipeline(t)
	b := p.Tenant("Other Partner", "DEMO_ENERGY")
	id := acceptedJob(t, p.postJob(p.token, jobQuery+"&create=false", strings.NewReader(p.jobBody(0, 5)), false))
	base := jobsURL + strconv.FormatInt(id, 10) + "/"
	for _, c := range []struct{ method, path string }{
		{http.MethodGet, base}, {http.MethodGet, base + "results/"}, {http.MethodGet, base + "results/?format=csv"},
		{http.MethodPost, base + "cancel/"},
	} {
		if r := p.As(b.Token, c.method, c.path, nil); r.Status != http.StatusNotFound || r.JSON()["code"] != "not_found" {
			t.Errorf("B %s %s: %d %s", c.method, c.path, r.Status, r.Body)
		}
	}
	if r := p.As(b.Token, http.MethodGet, jobsURL, nil); r.Status != http.StatusOK || string(r.Body) != "[]" {
		t.Errorf("B's list: %d %s", r.Status, r.Body)
	}
	if r := p.As(p.token, http.MethodGet, jobsURL, nil); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"id":`+strconv.FormatInt(id, 10)) {
		t.Errorf("A's list: %d %s", r.Status, r.Body)
	}
	if v := p.job(p.token, id); v.State == "CANCELLED" {
		t.Error("B's cancel reached A's job")
	}
	// The operator console's overview lists it (operators see every organisation's jobs).
	jobs, err := p.DB.ConsoleJobs(context.Background(), 20)
	if err != nil || len(jobs) != 1 || jobs[0].ID != id || jobs[0].Total != 5 || jobs[0].Done != 0 || jobs[0].State != "PROCESSING" {
		t.Errorf("console jobs: %+v %v", jobs, err)
	}
}

// TestJobSurvivesPostgresRestart: Postgres stops mid-job (job status is a
// 503 meanwhile, never a 500) and starts again; the job resumes from
// where Postgres had it and completes with exact counters.
func TestJobSurvivesPostgresRestart(t *testing.T) {
	pg := testutil.NewPGServer(t)
	p := newPipelineOn(t, pg)
	must(t, p.DB.SetConcurrencyLimit(context.Background(), 10))
	const n = 400
	id := acceptedJob(t, p.postJob(p.token, jobQuery, strings.NewReader(p.jobBody(0, n)), false))
	p.StartWorker(func(c *testutilConfig) { c.JobLease = 2 * time.Second })
	if v := p.waitCounter(p.token, id, "created", 40, time.Minute); v.Counters["created"] >= n-50 {
		t.Fatalf("%d of %d created before the stop; the test proves little", v.Counters["created"], n)
	}
	pg.Stop()
	assertUnavailable(t, p.As(p.token, http.MethodGet, jobsURL+strconv.FormatInt(id, 10)+"/", nil))
	time.Sleep(2 * time.Second)
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	v := p.waitJob(p.token, id, 2*time.Minute)
	if v.State != "COMPLETED" {
		t.Fatalf("job %s: %v", v.State, v.Counters)
	}
	checkCounters(t, v, map[string]int64{"received": n, "created": n})
	p.assertJobAccountsOnce(n)
	testutil.Tally(testutil.FaultsSurvived, 1)
}
