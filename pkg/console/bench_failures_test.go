package console_test

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"
)

// BenchmarkFailuresView renders the Failures view of a supplier with
// 30,000 failure records (one to three field errors each over 10 codes
// at 3 attrs, a fifth resolved) beside another supplier's 100,000, among
// CONSOLE_BENCH_PROCESSES (default 1,500,000) import processes: the first
// page, a filter by code, a filter that matches nothing (every record of
// the supplier read), a later page and a drill-down. Goal: < 300 ms a page,
// as the overview. Run it with `make bench-console`.
func BenchmarkFailuresView(b *testing.B) {
	n := 1_500_000
	if v, err := strconv.Atoi(os.Getenv("CONSOLE_BENCH_PROCESSES")); err == nil && v > 0 {
		n = v
	}
	st, srv := consoleStack(b)
	for _, s := range []string{"ACME", "BOLT"} {
		st.Supplier(s)
	}
	start := time.Now()
	seedProcesses(b, st.DB, n, "ACME", "BOLT")
	g := st.DB.Gorm()
	for code, count := range map[string]int{"ACME": 30_000, "BOLT": 100_000} {
		if err := g.Exec(`
			INSERT INTO import_failures (supplier_id, external_account_number, source, fingerprint, codes, attrs, error, resolved_at)
			SELECT s.id, 'EXT-' || lpad((i * 50)::text, 8, '0'), 'job_line', import_failure_fingerprint(x.e),
			       ARRAY(SELECT code FROM import_failure_fields(x.e)), ARRAY(SELECT attr FROM import_failure_fields(x.e)), x.e,
			       CASE WHEN i % 5 = 0 THEN now() END
			  FROM import_suppliers s, generate_series(1, ?::int) i,
			       LATERAL (SELECT jsonb_build_object('code', 'account_failed_validation', 'detail', 'Account failed validation.',
			                'errors', (SELECT jsonb_agg(jsonb_build_object('code', 'code_' || ((i + k) % 10),
			                           'attr', 'supply_addresses.0.meter_points.' || ((i + k) % 3) || '.mpxn', 'detail', 'This value is invalid.'))
			                             FROM generate_series(0, i % 3) k))) x(e)
			 WHERE s.code = ?`, count, code).Error; err != nil {
			b.Fatal(err)
		}
	}
	if err := g.Exec(`VACUUM ANALYZE import_failures`).Error; err != nil {
		b.Fatal(err)
	}
	var later, one int64
	if err := g.Raw(`SELECT f.id FROM import_failures f JOIN import_suppliers s ON s.id = f.supplier_id AND s.code = 'ACME'
		ORDER BY f.id OFFSET 20000 LIMIT 1`).Scan(&later).Error; err != nil {
		b.Fatal(err)
	}
	one = later + 1
	b.Logf("seeded %d processes and 130,000 failure records in %s", n, time.Since(start).Round(time.Millisecond))
	br := loggedIn(b, st, srv.URL, "bench")
	for _, path := range []string{
		"/suppliers/ACME/failures",
		"/suppliers/ACME/failures?code=code_3&attr=supply_addresses.0.meter_points.1.mpxn&resolved=false",
		"/suppliers/ACME/failures?code=no_such_code",
		fmt.Sprintf("/suppliers/ACME/failures?after=%d", later),
		fmt.Sprintf("/suppliers/ACME/failures/%d", one),
	} {
		b.Run(path, func(b *testing.B) {
			if p := br.do(http.MethodGet, path, nil); p.Status != http.StatusOK { // and warm
				b.Fatalf("GET %s: %d %.300s", path, p.Status, p.Body)
			}
			var took []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if p := br.do(http.MethodGet, path, nil); p.Status != http.StatusOK {
					b.Fatalf("GET %s: %d", path, p.Status)
				}
				took = append(took, time.Since(t0))
			}
			slices.Sort(took)
			median, worst := took[len(took)/2], took[len(took)-1]
			b.ReportMetric(float64(median.Microseconds())/1000, "median-ms")
			b.ReportMetric(float64(worst.Microseconds())/1000, "worst-ms")
			if median > 300*time.Millisecond {
				b.Errorf("GET %s took %s (median), goal < 300 ms", path, median)
			}
		})
	}
}
