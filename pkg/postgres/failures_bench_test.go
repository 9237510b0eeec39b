package postgres_test

import (
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/postgres"
)

// BenchmarkFailureSummary times the partner summary (GET
// /v1/data-import/failures/summary/) of a supplier with 30,000 failure
// records among BENCH_FAILURES_ACCOUNTS (default 1,500,000) staged
// accounts, beside another supplier's 100,000 records. Goal: < 100 ms.
// The records go through the one recording statement (upsertFailures), one
// to three field errors each, over 30 (code, attr) pairs, a fifth resolved.
// make bench-failures runs it.
func BenchmarkFailureSummary(b *testing.B) {
	accounts := 1_500_000
	if v, err := strconv.Atoi(os.Getenv("BENCH_FAILURES_ACCOUNTS")); err == nil {
		accounts = v
	}
	e := newEnv(b)
	sup := e.supplier("BENCH_FAILURES", false)
	noise := e.supplier("BENCH_NOISE", false)
	start := time.Now()
	e.must(e.g.Exec(`INSERT INTO import_processes (supplier_id, external_account_number, staged_version)
		SELECT ?, 'EXT-' || i, 1 FROM generate_series(1, ?) i`, sup.ID, accounts).Error)
	seed := func(supplierID int64, n int) {
		// Account i fails with 1 + i%3 field errors drawn from 10 codes at 3 attrs.
		e.must(e.db.UpsertFailuresFrom(e.ctx, `
			SELECT NULL::bigint, $1::bigint, 'EXT-' || (i * 50), 'job_line', jsonb_build_object('code', 'account_failed_validation',
			       'detail', 'Account failed validation.', 'errors', (SELECT jsonb_agg(jsonb_build_object('code', 'code_' || ((i + k) % 10),
			       'attr', 'supply_addresses.0.meter_points.' || ((i + k) % 3) || '.mpxn', 'detail', 'This value is invalid.'))
			         FROM generate_series(0, i % 3) k)), NULL::bigint, NULL::bigint, 1::bigint
			  FROM generate_series(1, $2::int) i`, supplierID, n))
	}
	seed(sup.ID, 30_000)
	seed(noise.ID, 100_000)
	e.must(e.g.Exec(`UPDATE import_failures SET resolved_at = now() WHERE supplier_id = ? AND id % 5 = 0`, sup.ID).Error)
	// Autovacuum's steady state: the summary is an index-only scan.
	e.must(e.g.Exec(`VACUUM ANALYZE import_failures`).Error)
	var n int64
	e.scalar(&n, `SELECT count(*) FROM import_failures WHERE supplier_id = ?`, sup.ID)
	if n != 30_000 {
		b.Fatalf("%d records seeded, want 30,000", n)
	}
	b.Logf("seeded %d accounts and 130,000 failure records in %s", accounts, time.Since(start).Round(time.Millisecond))
	q := postgres.FailureQuery{OrganisationID: 1, SupplierID: sup.ID}
	summary := func() time.Duration {
		t0 := time.Now()
		counts, err := e.db.FailureSummary(e.ctx, q)
		e.must(err)
		if len(counts) != 30 {
			b.Fatalf("%d (code, attr) pairs, want 30", len(counts))
		}
		return time.Since(t0)
	}
	b.Logf("first summary (cold) %s", summary().Round(time.Microsecond))
	var took []time.Duration
	for b.Loop() {
		took = append(took, summary())
	}
	slices.Sort(took)
	median, worst := took[len(took)/2], took[len(took)-1]
	b.ReportMetric(float64(median.Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(worst.Microseconds())/1000, "worst-ms")
	if median > 100*time.Millisecond {
		b.Errorf("the summary took %s (median), goal < 100 ms", median)
	}
}
