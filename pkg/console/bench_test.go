package console_test

import (
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// BenchmarkOverview renders the overview page (GET / with a session: every
// aggregate recomputed, the per-process cache off) with CONSOLE_BENCH_PROCESSES
// (default 1,000,000) import processes in the database. Goal: < 300 ms a
// page. Run it with `make bench-console`.
func BenchmarkOverview(b *testing.B) {
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("CONSOLE_BENCH_PROCESSES")); err == nil && v > 0 {
		n = v
	}
	st, srv := consoleStack(b, func(c *testutil.StackConfig) { c.ConsoleOverviewCacheTTL = time.Nanosecond })
	for _, s := range []string{"ACME", "BOLT", "CRUX"} {
		st.Supplier(s)
	}
	start := time.Now()
	seedProcesses(b, st.DB, n, "ACME", "BOLT", "CRUX")
	b.Logf("seeded %d processes in %s", n, time.Since(start).Round(time.Millisecond))
	br := loggedIn(b, st, srv.URL, "bench")
	for _, path := range []string{"/", "/overview/live", "/overview/chart.json", "/suppliers/ACME"} {
		if p := br.do(http.MethodGet, path, nil); p.Status != http.StatusOK { // warm the caches once
			b.Fatalf("GET %s: %d", path, p.Status)
		}
	}
	for _, path := range []string{"/", "/overview/chart.json"} {
		b.Run(path, func(b *testing.B) {
			var worst time.Duration
			for b.Loop() {
				t0 := time.Now()
				if p := br.do(http.MethodGet, path, nil); p.Status != http.StatusOK {
					b.Fatalf("GET %s: %d", path, p.Status)
				}
				worst = max(worst, time.Since(t0))
			}
			b.ReportMetric(float64(worst.Microseconds())/1000, "worst-ms")
		})
	}
}
