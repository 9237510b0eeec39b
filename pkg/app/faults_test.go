package app_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/app"
	"github.com/gridshift/dataimport/pkg/queue"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// stageMany stages n accounts EXT-<from>... through the API.
func (p *pipeline) stageMany(from, n int) []string {
	p.TB.Helper()
	ids := make([]string, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range n {
		ids[i] = fmt.Sprintf("EXT-%04d", from+i)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			p.stage(ids[i])
		}()
	}
	wg.Wait()
	return ids
}

// createAsync asks for every account with Prefer: respond-async.
func (p *pipeline) createAsync(ids []string) {
	p.TB.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for _, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if r := p.create(id, nil, "Prefer", "respond-async"); r.Status != http.StatusAccepted && r.Status != http.StatusCreated {
				p.TB.Errorf("create %s: %d %s", id, r.Status, r.Body)
			}
		}()
	}
	wg.Wait()
}

// waitCompleted polls Postgres until n processes are COMPLETED.
func (p *pipeline) waitCompleted(n int64, within time.Duration) {
	p.TB.Helper()
	deadline := time.Now().Add(within)
	for {
		done := p.count(`SELECT count(*) FROM import_processes WHERE status = 'COMPLETED'`)
		if done == n {
			return
		}
		if time.Now().After(deadline) {
			p.TB.Fatalf("%d of %d accounts COMPLETED after %s", done, n, within)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// assertExactlyOnce checks the invariants every fault must leave intact.
func (p *pipeline) assertExactlyOnce(n int64) {
	p.TB.Helper()
	checks := map[string]int64{
		`SELECT count(*) FROM accounts`:                                                                           n,
		`SELECT count(DISTINCT platform_account_number) FROM accounts`:                                            n,
		`SELECT count(*) FROM import_processes WHERE status = 'COMPLETED'`:                                        n,
		`SELECT count(*) FROM import_attempts WHERE outcome = 'COMPLETED'`:                                        n,
		`SELECT count(*) FROM account_customers`:                                                                  2 * n,
		`SELECT count(*) FROM statements`:                                                                         n,
		`SELECT count(*) FROM account_customers c LEFT JOIN accounts a ON a.id = c.account_id WHERE a.id IS NULL`: 0,
		`SELECT count(*) FROM import_process_versions`:                                                            n,
	}
	lost := int64(0)
	for q, want := range checks {
		if got := p.count(q); got != want {
			p.TB.Errorf("%s = %d, want %d", q, got, want)
			lost += max(want-got, got-want)
		}
	}
	testutil.Tally(testutil.RowsChecked, int(n))
	testutil.Tally(testutil.RowsLost, int(lost))
	// A job the reconciler re-enqueued may still be finishing; a leaked slot
	// would stay until its lease (10 s) expires.
	slots := queue.NewSemaphore(p.API.Redis, app.SlotsKey, time.Minute)
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		n, err := slots.InUse(context.Background())
		if err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			holders, _ := slots.Holders(context.Background())
			p.TB.Errorf("leaked concurrency slots: %d (%v): %v", n, err, holders)
			break
		}
	}
}

func TestConcurrencyLimit(t *testing.T) {
	p := newPipeline(t)
	ctx := context.Background()
	ids := p.stageMany(0, 30)
	must(t, p.DB.SetConcurrencyLimit(ctx, 3))

	// No worker yet, so accepted accounts stay in progress: exactly 3 get in.
	var accepted, limited atomic.Int32
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := p.create(id, nil, "Prefer", "respond-async")
			switch r.Status {
			case http.StatusAccepted:
				accepted.Add(1)
			case http.StatusTooManyRequests:
				limited.Add(1)
				if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 || r.JSON()["code"] != "concurrency_limit_exceeded" {
					t.Errorf("429 without Retry-After or code: %v %s", r.Header, r.Body)
				}
			default:
				t.Errorf("%s: %d %s", id, r.Status, r.Body)
			}
		}()
	}
	wg.Wait()
	if accepted.Load() != 3 || limited.Load() != 27 {
		t.Fatalf("accepted %d, limited %d", accepted.Load(), limited.Load())
	}
	testutil.Tally(testutil.RefusedCorrectly, int(limited.Load()))
	if n := p.count(`SELECT count(*) FROM import_processes WHERE status = 'IN_PROGRESS'`); n != 3 {
		t.Fatalf("%d in progress", n)
	}

	// With a worker, clients that honour Retry-After get everything done,
	// and the number in progress, sampled throughout, never exceeds 3.
	p.StartWorker(func(c *testutilConfig) { c.WorkerConcurrency = 2 })
	stop := make(chan struct{})
	var maxSeen atomic.Int64
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if n := p.count(`SELECT count(*) FROM import_processes WHERE status = 'IN_PROGRESS'`); n > maxSeen.Load() {
				maxSeen.Store(n)
			}
		}
	}()
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for try := 0; try < 200; try++ {
				r := p.create(id, nil)
				if r.Status == http.StatusCreated || (r.Status == http.StatusBadRequest && r.JSON()["code"] == "account_already_imported") {
					return
				}
				if r.Status != http.StatusTooManyRequests {
					t.Errorf("%s: %d %s", id, r.Status, r.Body)
					return
				}
				time.Sleep(50 * time.Millisecond) // Retry-After, scaled down for the test
			}
			t.Errorf("%s never got through", id)
		}()
	}
	wg.Wait()
	close(stop)
	if maxSeen.Load() > 3 {
		t.Fatalf("%d accounts in progress at once with limit 3", maxSeen.Load())
	}
	p.assertExactlyOnce(30)

	// limit off lets a burst straight through.
	must(t, p.DB.SetConcurrencyLimit(ctx, 0))
	more := p.stageMany(30, 10)
	for _, id := range more {
		if r := p.create(id, nil, "Prefer", "respond-async"); r.Status != http.StatusAccepted {
			t.Fatalf("with limit off: %d %s", r.Status, r.Body)
		}
	}
	p.waitCompleted(40, 30*time.Second)
}

type testutilConfig = testutil.StackConfig

func TestWorkerSIGKILLMidBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for asynq to recover the killed worker's tasks")
	}
	// asynq recovers a dead worker's tasks a minute after the kill (a lease
	// of 30 s, then 30 s allowed for clock skew): a minute of waiting,
	// shared with the package's other parallel tests.
	t.Parallel()
	p := newPipeline(t)
	ids := p.stageMany(0, 200)
	env := []string{"WORKER_CONCURRENCY=4", "RECONCILE_EVERY=200ms", "RECONCILE_GRACE=1s", "SLOT_LEASE=10s"}
	w := p.StartProcess("worker", env...)
	p.createAsync(ids)
	// Kill it while the batch is half done, with transactions in flight.
	deadline := time.Now().Add(30 * time.Second)
	for p.count(`SELECT count(*) FROM import_processes WHERE status = 'COMPLETED'`) < 40 {
		if time.Now().After(deadline) {
			t.Fatalf("worker made no progress:\n%s", w.Logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.Kill()
	done := p.count(`SELECT count(*) FROM import_processes WHERE status = 'COMPLETED'`)
	if done >= 200 {
		t.Fatal("batch finished before the kill; the test proves nothing")
	}
	t.Logf("killed worker with %d/200 completed", done)
	p.StartProcess("worker", env...)
	p.waitCompleted(200, 150*time.Second)
	p.assertExactlyOnce(200)
	testutil.Tally(testutil.FaultsSurvived, 1)
}

func TestRedisFlushallMidBatch(t *testing.T) {
	p := newPipeline(t)
	ids := p.stageMany(0, 200)
	p.StartWorker(func(c *testutilConfig) { c.WorkerConcurrency = 2 })
	p.createAsync(ids)
	for p.count(`SELECT count(*) FROM import_processes WHERE status = 'COMPLETED'`) < 20 {
		time.Sleep(5 * time.Millisecond)
	}
	must(t, p.API.Redis.FlushAll(context.Background()).Err())
	done := p.count(`SELECT count(*) FROM import_processes WHERE status = 'COMPLETED'`)
	if done >= 200 {
		t.Fatal("batch finished before the flush; the test proves nothing")
	}
	t.Logf("flushed Redis with %d/200 completed", done)
	p.waitCompleted(200, 60*time.Second)
	p.assertExactlyOnce(200)
	testutil.Tally(testutil.FaultsSurvived, 1)
}
