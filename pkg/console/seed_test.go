package console_test

import (
	"testing"

	"github.com/gridshift/dataimport/pkg/postgres"
)

// seedProcesses inserts n import processes with plain SQL (generate_series,
// one transaction) spread over the suppliers: by i % 10, six in ten created
// (PROCESSED, with their accounts, created over the last 24 hours, one a
// minute per supplier and i), one errored (code invalid_phone_number, or
// data_refused for every 7th), one staged only, one scheduled and waiting,
// and one in ten being created for i % 100 = 9 (else staged). It returns how
// many of each it made per supplier, as the overview must show them.
func seedProcesses(t testing.TB, db *postgres.DB, n int, suppliers ...string) map[string]*postgres.SupplierCounts {
	t.Helper()
	g := db.Gorm()
	err := g.Exec(`
	WITH s AS (SELECT id, row_number() OVER (ORDER BY code) - 1 AS k FROM import_suppliers WHERE code IN ?),
	     gen AS (SELECT i, i % 10 AS kind, (i / 10) % (SELECT count(*) FROM s) AS sk FROM generate_series(1, ?) i),
	     procs AS (
	  INSERT INTO import_processes (supplier_id, external_account_number, status, v2_status, scheduled, latest_error,
	                                platform_account_number, account_created_at, staged_version, attempt, modified_at)
	  SELECT s.id, 'EXT-' || lpad(gen.i::text, 8, '0'),
	         CASE WHEN kind < 6 THEN 'COMPLETED' WHEN kind = 8 OR (kind = 9 AND i % 100 = 9) THEN 'IN_PROGRESS' ELSE 'UNKNOWN' END,
	         CASE WHEN kind < 6 THEN 'PROCESSED' WHEN kind = 6 THEN 'ERRORED' WHEN kind = 9 AND i % 100 = 9 THEN 'IN_PROGRESS' ELSE 'PENDING' END,
	         kind IN (6, 8, 9) AND (kind <> 9 OR i % 100 = 9),
	         CASE WHEN kind = 6 THEN jsonb_build_object('code', CASE WHEN i % 7 = 0 THEN 'data_refused' ELSE 'invalid_phone_number' END,
	                                                    'detail', 'seeded error ' || i, 'domain', 'validation') END,
	         CASE WHEN kind < 6 THEN 'A-' || lpad(upper(to_hex(i)), 8, '0') END,
	         CASE WHEN kind < 6 THEN now() - ((i % 1440) || ' minutes')::interval END,
	         1, CASE WHEN kind = 7 OR (kind = 9 AND i % 100 <> 9) THEN 0 ELSE 1 END,
	         now() - ((i % 600) || ' seconds')::interval
	    FROM gen JOIN s ON s.k = gen.sk
	  RETURNING id, supplier_id, external_account_number, platform_account_number)
	INSERT INTO accounts (platform_account_number, supplier_id, import_process_id, external_account_number, account_type)
	SELECT platform_account_number, supplier_id, id, external_account_number, 'DOMESTIC' FROM procs WHERE platform_account_number IS NOT NULL`,
		suppliers, n).Error
	if err != nil {
		t.Fatalf("seed %d processes: %v", n, err)
	}
	// What autovacuum does after a bulk load; index-only scans need it.
	if err := g.Exec(`VACUUM ANALYZE import_processes`).Error; err != nil {
		t.Fatal(err)
	}
	want := map[string]*postgres.SupplierCounts{}
	for _, s := range suppliers {
		want[s] = &postgres.SupplierCounts{Code: s}
	}
	sorted := append([]string(nil), suppliers...)
	for i := 0; i < len(sorted); i++ {
		for j := i + 1; j < len(sorted); j++ {
			if sorted[j] < sorted[i] {
				sorted[i], sorted[j] = sorted[j], sorted[i]
			}
		}
	}
	for i := 1; i <= n; i++ {
		c := want[sorted[(i/10)%len(sorted)]]
		switch kind := i % 10; {
		case kind < 6:
			c.Completed++
		case kind == 6:
			c.Errored++
		case kind == 8:
			c.Scheduled++
		case kind == 9 && i%100 == 9:
			c.InProgress++
		default:
			c.Staged++
		}
	}
	return want
}
