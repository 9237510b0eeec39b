package postgres_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/postgres"
)

// TestLandedDigestKeptUntilAnyRowChanges: a status read's landed_digest is
// kept, and any write to any row the landed form reads, made straight in
// the database, makes it stale. The tables are taken from the landed
// statement itself and every one must carry the trigger, so a table added
// to the landed form without one fails here. Creation bumps nothing.
func TestLandedDigestKeptUntilAnyRowChanges(t *testing.T) {
	e := newEnv(t)
	s := e.supplier("LANDED_ENERGY", false)
	res, err := e.db.CreateAccount(e.ctx, verified(e.prepare(s, "LANDED-1", false, withPayments)))
	e.must(err)
	num := res.PlatformAccountNumber
	var accountID int64
	e.scalar(&accountID, `SELECT id FROM accounts WHERE platform_account_number = ?`, num)

	version := func() int64 {
		t.Helper()
		var v int64
		e.scalar(&v, `SELECT landed_version FROM accounts WHERE id = ?`, accountID)
		return v
	}
	// answered checks that LandedDigests answers what the tables hold now
	// and keeps it for the current version.
	answered := func(when string) string {
		t.Helper()
		m, err := e.db.LandedDigests(e.ctx, []string{num})
		e.must(err)
		e.db.WaitKept()
		live, v, err := e.db.LiveLandedDigest(e.ctx, num)
		e.must(err)
		if m[num] != live {
			t.Fatalf("%s: answered %q, the tables hold %q", when, m[num], live)
		}
		var kept string
		e.scalar(&kept, `SELECT digest FROM landed_digests WHERE account_id = ? AND version = ?`, accountID, v)
		if kept != live {
			t.Fatalf("%s: kept %q for version %d, the tables hold %q", when, kept, v, live)
		}
		return live
	}

	if v := version(); v != 0 {
		t.Fatalf("creation bumped landed_version to %d", v)
	}
	// Created one at a time: read back and kept behind the creation, before
	// any read asked.
	e.db.WaitKept()
	var keptAtCreation string
	e.scalar(&keptAtCreation, `SELECT coalesce(max(digest), '') FROM landed_digests WHERE account_id = ? AND version = 0`, accountID)
	if live, _, err := e.db.LiveLandedDigest(e.ctx, num); err != nil || keptAtCreation != live {
		t.Fatalf("kept at creation %q, the tables hold %q (%v)", keptAtCreation, live, err)
	}
	first := answered("after creation")

	// A kept digest is answered as kept: one planted for the current
	// version is what the next read answers...
	const planted = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	e.must(e.g.Exec(`UPDATE landed_digests SET digest = ? WHERE account_id = ?`, planted, accountID).Error)
	if m, err := e.db.LandedDigests(e.ctx, []string{num}); err != nil || m[num] != planted {
		t.Fatalf("kept digest not answered: %v %v", m, err)
	}
	e.must(e.g.Exec(`UPDATE landed_digests SET digest = ? WHERE account_id = ?`, first, accountID).Error)
	// ...and a reader that read an older version never overwrites a newer one.
	e.must(e.g.Exec(`UPDATE accounts SET balance = balance WHERE id = ?`, accountID).Error)
	answered("after a write to the account row")
	e.must(e.db.KeepLandedDigest(e.ctx, accountID, version()-1, planted))
	answered("after a slower reader kept an older version")

	var triggered []string
	e.must(e.g.Raw(`SELECT c.relname FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
		WHERE g.tgname = 'landed_changed' ORDER BY 1`).Scan(&triggered).Error)
	tables := postgres.LandedTables()
	if len(tables) < 14 {
		t.Fatalf("landed tables %v", tables)
	}
	if got, want := strings.Join(triggered, ","), strings.Join(slices.Sorted(slices.Values(tables)), ","); got != want {
		t.Errorf("tables with the landed_changed trigger:\n%s\nthe landed form reads:\n%s", got, want)
	}

	for _, table := range tables {
		t.Run(table, func(t *testing.T) {
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			var n int64
			must(e.g.Raw(`SELECT count(*) FROM ` + table).Scan(&n).Error)
			if n == 0 {
				t.Fatalf("the sample account has no %s row: the test would prove nothing", table)
			}
			// The private database holds this one account: any row is its.
			var col string
			must(e.g.Raw(`SELECT column_name FROM information_schema.columns
				WHERE table_schema = current_schema() AND table_name = ? AND column_name <> 'id' ORDER BY ordinal_position LIMIT 1`, table).Scan(&col).Error)
			v := version()
			must(e.g.Exec(`UPDATE ` + table + ` SET ` + col + ` = ` + col + ` WHERE ctid = (SELECT ctid FROM ` + table + ` LIMIT 1)`).Error)
			if got := version(); got <= v {
				t.Fatalf("UPDATE of %s.%s: landed_version %d → %d", table, col, v, got)
			}
			answered("after UPDATE")
			if table == "accounts" {
				return
			}
			// DELETE and INSERT of one row, in a transaction rolled back
			// after: the version moves with each. Rows that reference it
			// without cascading are set aside first and put back after.
			tx := e.g.Begin()
			defer tx.Rollback()
			at := func() int64 {
				t.Helper()
				var v int64
				must(tx.Raw(`SELECT landed_version FROM accounts WHERE id = ?`, accountID).Scan(&v).Error)
				return v
			}
			must(tx.Exec(`CREATE TEMP TABLE saved ON COMMIT DROP AS SELECT * FROM ` + table + ` LIMIT 1`).Error)
			var refs []struct{ Tab, Col string }
			must(tx.Raw(`SELECT child AS tab, child_cols[1] AS col FROM dataimport_foreign_keys
				WHERE parent = ? AND on_delete IN ('NO ACTION', 'RESTRICT')`, table).Scan(&refs).Error)
			for i, r := range refs {
				must(tx.Exec(fmt.Sprintf(`CREATE TEMP TABLE ref%d ON COMMIT DROP AS SELECT * FROM %s WHERE %s IN (SELECT id FROM saved)`, i, r.Tab, r.Col)).Error)
				must(tx.Exec(fmt.Sprintf(`DELETE FROM %s WHERE %s IN (SELECT id FROM saved)`, r.Tab, r.Col)).Error)
			}
			before := at()
			must(tx.Exec(`DELETE FROM ` + table + ` WHERE id IN (SELECT id FROM saved)`).Error)
			afterDelete := at()
			must(tx.Exec(`INSERT INTO ` + table + ` SELECT * FROM saved`).Error)
			afterInsert := at()
			if !(before < afterDelete && afterDelete < afterInsert) {
				t.Errorf("landed_version: %d, after DELETE %d, after INSERT %d", before, afterDelete, afterInsert)
			}
			for i, r := range refs {
				must(tx.Exec(fmt.Sprintf(`INSERT INTO %s SELECT * FROM ref%d`, r.Tab, i)).Error)
			}
		})
	}
	if v := version(); v < int64(len(tables)) {
		t.Errorf("landed_version %d after %d updates", v, len(tables))
	}
}

// BenchmarkLandedDigest: one status read's landed_digest, read back from
// the tables (cold: the account changed since it was last read) and kept.
func BenchmarkLandedDigest(b *testing.B) {
	e := newEnv(b)
	s := e.supplier("LANDED_BENCH", false)
	const n = 200
	nums := make([]string, n)
	for i := range nums {
		nums[i] = e.create(verified(e.prepare(s, fmt.Sprintf("LB-%03d", i), false, withPayments))).PlatformAccountNumber
	}
	read := func(b *testing.B, before func(num string)) {
		for i := 0; b.Loop(); i++ {
			num := nums[i%n]
			if before != nil {
				b.StopTimer()
				before(num)
				b.StartTimer()
			}
			if _, err := e.db.LandedDigests(e.ctx, []string{num}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("cold", func(b *testing.B) {
		read(b, func(num string) {
			e.db.WaitKept()
			e.must(e.g.Exec(`DELETE FROM landed_digests WHERE account_id = (SELECT id FROM accounts WHERE platform_account_number = ?)`, num).Error)
		})
	})
	e.db.WaitKept()
	if _, err := e.db.LandedDigests(e.ctx, nums); err != nil {
		b.Fatal(err)
	}
	e.db.WaitKept()
	b.Run("kept", func(b *testing.B) { read(b, nil) })
}

// TestStatusReadPlannedOnce: the landed statements of a status read keep
// their plan in the session. Postgres plans a prepared statement again on
// every execution while it prices the generic plan above the custom ones,
// as it did for the read-back by an array of ids (planning was about
// 1.5 ms of a 2.5 ms read); a single account is now read by a scalar.
func TestStatusReadPlannedOnce(t *testing.T) {
	e := newEnv(t)
	s := e.supplier("PLANNED_ONCE", false)
	var nums []string
	for i := range 3 {
		nums = append(nums, e.create(verified(e.prepare(s, fmt.Sprintf("PO-%d", i), false, withPayments))).PlatformAccountNumber)
	}
	e.db.WaitKept()
	e.db.SetMaxConns(1) // one session, whose prepared statements are counted below
	const reads = 20
	for i := range reads {
		e.must(e.g.Exec(`DELETE FROM landed_digests`).Error) // every read reads the account back
		if _, err := e.db.LandedDigests(e.ctx, []string{nums[i%len(nums)]}); err != nil {
			t.Fatal(err)
		}
		e.db.WaitKept()
	}
	var rows []struct {
		Statement    string
		GenericPlans int64
		CustomPlans  int64
	}
	// The statements the reads ran (the batch read-back behind the
	// creations ran here too, once or twice).
	e.must(e.g.Raw(`SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements
		WHERE statement LIKE '%FROM accounts a %' AND generic_plans + custom_plans >= ?`, reads).Scan(&rows).Error)
	if len(rows) != 2 {
		t.Fatalf("%d landed statements ran %d times in the session, want 2: the digest lookup and the read-back", len(rows), reads)
	}
	for _, r := range rows {
		// Postgres plans the first five executions for their values, then
		// keeps the generic plan if it is not dearer.
		if r.CustomPlans > 5 {
			t.Errorf("planned %d times in %d executions: %.120s", r.CustomPlans, r.GenericPlans+r.CustomPlans, strings.Join(strings.Fields(r.Statement), " "))
		}
	}
}
