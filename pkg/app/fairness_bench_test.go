package app_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// BenchmarkFairnessCreateLatency measures supplier B's per-account create
// latency (first request to 201, 429s retried after 50 ms) alone, then
// while supplier A's bulk job of FAIRNESS_JOB_ACCOUNTS accounts (default
// 100000) runs under the cluster-wide cap FAIRNESS_CAP (default 8). The
// figure is in results/fairness.md. Run it once:
//
//	go test -run '^$' -bench FairnessCreateLatency -benchtime 1x -timeout 60m ./pkg/app/
func BenchmarkFairnessCreateLatency(b *testing.B) {
	nA, capN, nB := envInt("FAIRNESS_JOB_ACCOUNTS", 100000), envInt("FAIRNESS_CAP", 8), envInt("FAIRNESS_B_CREATES", 200)
	ctx := context.Background()
	st := testutil.NewStack(b, testutil.FastPipeline)
	st.RequestTimeout = 20 * time.Minute // A's upload
	st.Supplier("DEMO_ENERGY")
	p := &pipeline{Stack: st, token: st.Tenant("Demo Partner", "DEMO_ENERGY").Token}
	if _, err := st.DB.CreateTeam(ctx, "Migrations"); err != nil {
		b.Fatal(err)
	}
	st.Supplier("B_ENERGY")
	tokB := st.Tenant("B Partner", "B_ENERGY").Token
	ids := make([]string, 2*nB)
	for i := range ids {
		ids[i] = fmt.Sprintf("B-%05d", i)
		body := strings.Replace(p.account(ids[i]), `"import_supplier": "DEMO_ENERGY"`, `"import_supplier": "B_ENERGY"`, 1)
		if r := p.As(tokB, http.MethodPost, stagePath, body); r.Status != http.StatusCreated {
			b.Fatalf("stage %s: %d %s", ids[i], r.Status, r.Body)
		}
	}
	if err := st.DB.SetConcurrencyLimit(ctx, capN); err != nil {
		b.Fatal(err)
	}
	p.StartWorker()
	b.ResetTimer()

	alone, refusedAlone := createCounting(b, p, tokB, "B_ENERGY", ids[:nB], 4)
	jobID := acceptedJob(b, p.postJob(p.token, jobQuery, strings.NewReader(p.jobBody(0, nA)), true))
	p.waitCounter(p.token, jobID, "created", int64(min(100, nA/10)), 10*time.Minute)
	before := p.job(p.token, jobID).Counters["created"]
	start := time.Now()
	under, refusedUnder := createCounting(b, p, tokB, "B_ENERGY", ids[nB:], 4)
	took := time.Since(start)
	after := p.job(p.token, jobID)
	b.StopTimer()
	if after.State == "COMPLETED" {
		b.Logf("warning: A's job completed before B's creates ended; the second figure is partly B alone")
	}
	pa, pu := percentiles(alone), percentiles(under)
	b.ReportMetric(float64(pa[1].Milliseconds()), "p99-alone-ms")
	b.ReportMetric(float64(pu[1].Milliseconds()), "p99-under-job-ms")
	b.Logf("cap %d; B %d creates alone: p50 %s p99 %s max %s, %d 429s; B %d creates while A's %d-account job runs: p50 %s p99 %s max %s, %d 429s; "+
		"A created %d accounts during those %s (%.0f/s)",
		capN, nB, pa[0], pa[1], pa[2], refusedAlone, nB, nA, pu[0], pu[1], pu[2], refusedUnder, after.Counters["created"]-before, took.Round(time.Millisecond),
		float64(after.Counters["created"]-before)/took.Seconds())
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// createAll creates ids with clients concurrent partners, each create
// answered synchronously and a 429 retried after 50 ms (Retry-After,
// scaled down); it returns each create's latency, retries included.
func createAll(tb testing.TB, p *pipeline, token, supplier string, ids []string, clients int) []time.Duration {
	lat, _ := createCounting(tb, p, token, supplier, ids, clients)
	return lat
}

// createCounting is createAll that also counts the 429s received.
func createCounting(tb testing.TB, p *pipeline, token, supplier string, ids []string, clients int) ([]time.Duration, int64) {
	tb.Helper()
	lat := make([]time.Duration, len(ids))
	var next atomic.Int32
	var refused atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(ids); i = int(next.Add(1)) - 1 {
				start := time.Now()
				for {
					r := p.As(token, http.MethodPost, createPath, map[string]any{"external_account_number": ids[i],
						"import_supplier_code": supplier, "operations_team_name": "Migrations"})
					if r.Status == http.StatusCreated {
						break
					}
					refused.Add(1)
					if r.Status != http.StatusTooManyRequests || time.Since(start) > 60*time.Second {
						tb.Errorf("create %s: %d %s after %s", ids[i], r.Status, r.Body, time.Since(start))
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
				lat[i] = time.Since(start)
			}
		}()
	}
	wg.Wait()
	return lat, refused.Load()
}

// percentiles are the p50, p99 and max of d.
func percentiles(d []time.Duration) [3]time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return [3]time.Duration{s[len(s)/2], s[(len(s)*99)/100], s[len(s)-1]}
}
