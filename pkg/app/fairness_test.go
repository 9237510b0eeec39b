package app_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/app"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
)

// TestConcurrencyLimitFairShares: supplier A's bulk job runs under the
// cluster-wide cap 4 while supplier B (another organisation, capped at 2
// of its own) creates accounts one by one, retrying 429s as partners do.
// B's creates are all served while A's job is still running (a bulk round
// takes at most its fair share once B is waiting, so B is never starved),
// with a bounded latency; sampled throughout, the semaphore never holds
// more than 4 slots nor more than 2 of B's.
func TestConcurrencyLimitFairShares(t *testing.T) {
	p := newPipeline(t)
	ctx := context.Background()
	supB := p.Supplier("B_ENERGY")
	tenB := p.Tenant("B Partner", "B_ENERGY")
	supA, err := p.DB.SupplierByCode(ctx, "DEMO_ENERGY")
	must(t, err)
	const nB, capB, global = 16, 2, 4
	bIDs := make([]string, nB)
	for i := range bIDs {
		bIDs[i] = fmt.Sprintf("B-%04d", i)
		body := strings.Replace(p.account(bIDs[i]), `"import_supplier": "DEMO_ENERGY"`, `"import_supplier": "B_ENERGY"`, 1)
		if r := p.As(tenB.Token, http.MethodPost, stagePath, body); r.Status != http.StatusCreated {
			t.Fatalf("stage %s: %d %s", bIDs[i], r.Status, r.Body)
		}
	}
	must(t, p.DB.SetConcurrencyLimit(ctx, global))
	must(t, p.DB.SetConcurrencyCap(ctx, postgres.CapSupplier, "B_ENERGY", capB))

	// Sample the semaphore itself: the global and B's counts never pass their caps.
	slots := queue.NewSemaphore(p.API.Redis, app.SlotsKey, time.Minute)
	stop := make(chan struct{})
	var maxAll, maxB, maxA, samples atomic.Int64
	var bPhase atomic.Bool
	var inPhase, aOverShare atomic.Int64 // samples while B creates; of them, A over its fair share
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(3 * time.Millisecond):
			}
			n, err1 := slots.InUse(ctx)
			c, err2 := slots.Counts(ctx)
			if err1 != nil || err2 != nil {
				continue
			}
			samples.Add(1)
			if bPhase.Load() {
				inPhase.Add(1)
				if c.Suppliers[supA.ID] > global/2 {
					aOverShare.Add(1)
				}
			}
			for v, m := range map[int64]*atomic.Int64{int64(n): &maxAll, int64(c.Suppliers[supB.ID]): &maxB, int64(c.Suppliers[supA.ID]): &maxA} {
				if v > m.Load() {
					m.Store(v)
				}
			}
		}
	}()

	p.StartWorker(func(c *testutilConfig) { c.WorkerConcurrency = 4 })
	const nA = 400
	jobID := acceptedJob(t, p.postJob(p.token, jobQuery, strings.NewReader(p.jobBody(0, nA)), true))
	p.waitCounter(p.token, jobID, "created", 20, time.Minute) // A's job is in full flow

	// B's partner: 4 clients, each create answered synchronously, a 429
	// retried after a short pause (Retry-After, scaled down for the test).
	bPhase.Store(true)
	lat := createAll(t, p, tenB.Token, "B_ENERGY", bIDs, 4)
	bPhase.Store(false)
	bDone := p.job(p.token, jobID)
	v := p.waitJob(p.token, jobID, 3*time.Minute)
	close(stop)
	<-sampled
	checkCounters(t, v, map[string]int64{"received": nA, "created": nA})
	if bDone.State == "COMPLETED" {
		t.Errorf("A's job finished before B's %d creates were served: B waited for it (starved)", nB)
	}
	slices.Sort(lat)
	if t.Failed() {
		return
	}
	t.Logf("B create latency while A's job runs: p50 %s, max %s; A's job at %d created when B was done; slots sampled %d times, max %d (A %d, B %d); "+
		"while B created, A held more than its fair share in %d of %d samples",
		lat[nB/2], lat[nB-1], bDone.Counters["created"], samples.Load(), maxAll.Load(), maxA.Load(), maxB.Load(), aOverShare.Load(), inPhase.Load())
	if lat[nB-1] > 20*time.Second {
		t.Errorf("B's slowest create took %s", lat[nB-1])
	}
	if samples.Load() < 50 || maxAll.Load() > global || maxB.Load() > capB || maxB.Load() == 0 {
		t.Fatalf("semaphore sampled %d times: max %d slots (cap %d), max %d of B's (cap %d)", samples.Load(), maxAll.Load(), global, maxB.Load(), capB)
	}
}

// TestConcurrencyLimitPerOrganisation: an organisation's cap refuses its
// next create with the same 429 while another organisation's creates for
// the same supplier still get slots; each attempt records its
// organisation, so the recount after a Redis loss names the right owners.
func TestConcurrencyLimitPerOrganisation(t *testing.T) {
	p := newPipeline(t) // no worker: accepted accounts stay in progress
	ctx := context.Background()
	other := p.Tenant("Other Partner", "DEMO_ENERGY")
	must(t, p.DB.SetConcurrencyCap(ctx, postgres.CapOrganisation, "Demo Partner", 2))
	ids := p.stageMany(0, 4)
	for i, id := range ids {
		token, want := p.token, http.StatusAccepted
		switch {
		case i == 2:
			want = http.StatusTooManyRequests // Demo Partner's third
		case i == 3:
			token = other.Token // another organisation: its own count
		}
		r := p.As(token, http.MethodPost, createPath, map[string]any{"external_account_number": id, "import_supplier_code": "DEMO_ENERGY",
			"operations_team_name": "Migrations"}, "Prefer", "respond-async")
		if r.Status != want || (want == http.StatusTooManyRequests && r.JSON()["code"] != "concurrency_limit_exceeded") {
			t.Fatalf("create %s: %d %s, want %d", id, r.Status, r.Body, want)
		}
	}
	var orgs []int64
	must(t, p.DB.Gorm().Raw(`SELECT id FROM organisations WHERE name IN ('Demo Partner', 'Other Partner') ORDER BY name`).Scan(&orgs).Error)
	held, err := p.DB.InProgressSlotHolders(ctx)
	must(t, err)
	byOrg := map[int64]int{}
	for _, h := range held {
		byOrg[h.Owner.Organisation]++
	}
	if len(held) != 3 || byOrg[orgs[0]] != 2 || byOrg[orgs[1]] != 1 {
		t.Fatalf("in progress by organisation %v (ids %v), held %+v", byOrg, orgs, held)
	}
	slots := queue.NewSemaphore(p.API.Redis, app.SlotsKey, time.Minute)
	c, err := slots.Counts(ctx)
	must(t, err)
	if c.Organisations[orgs[0]] != 2 || c.Organisations[orgs[1]] != 1 {
		t.Fatalf("semaphore counts by organisation: %v", c.Organisations)
	}
}
