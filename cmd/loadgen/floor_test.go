package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// The account tables are exactly what an account owns: the tables deleted
// with it (a NOT NULL foreign key with ON DELETE CASCADE, to the account or
// to a table it owns), less the owned bookkeeping named as such. A new
// account table from a later migration fails here until it is classified.
func TestAccountTablesAreWhatAnAccountOwns(t *testing.T) {
	d := testutil.NewDatabase(t)
	ctx := context.Background()
	var owned []string
	err := d.DB.Gorm().Raw(`WITH RECURSIVE owned(t) AS (
			SELECT 'accounts'::regclass
			UNION
			SELECT f.child::regclass FROM dataimport_foreign_keys f JOIN owned o ON f.parent::regclass = o.t
			 WHERE f.on_delete = 'CASCADE'
			   AND (SELECT bool_and(a.attnotnull) FROM pg_attribute a WHERE a.attrelid = f.child::regclass AND a.attname = ANY (f.child_cols)))
		SELECT t::text FROM owned ORDER BY 1`).WithContext(ctx).Scan(&owned).Error
	if err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(accountTables), ownedBookkeeping...)
	sort.Strings(want)
	if !slices.Equal(owned, want) {
		t.Fatalf("tables an account owns: %v\naccount tables + owned bookkeeping: %v", owned, want)
	}
}

// bookkeeping splits growth, not size, between the account tables and the
// rest, and orders the breakdown largest first.
func TestBookkeepingSplitsGrowth(t *testing.T) {
	before := map[string]int64{"accounts": 16384, "import_processes": 8192, "meters": 8192}
	after := map[string]int64{"accounts": 16384 + 40960, "import_processes": 8192 + 20480, "meters": 8192 + 10240, "import_job_records": 30720}
	b := bookkeeping(before, after, 10)
	if b.AccountBytes != 51200 || b.BookkeepingBytes != 51200 || b.ratio() != 1 {
		t.Fatalf("account %d, bookkeeping %d bytes, ratio %.2f; want 51200, 51200, 1", b.AccountBytes, b.BookkeepingBytes, b.ratio())
	}
	if b.accountKB() != 5 || b.bookkeepingKB() != 5 {
		t.Fatalf("KB per account %.2f / %.2f, want 5 / 5", b.accountKB(), b.bookkeepingKB())
	}
	var order []string
	for _, g := range b.Tables {
		order = append(order, g.Table)
	}
	if want := []string{"accounts", "import_job_records", "import_processes", "meters"}; !slices.Equal(order, want) {
		t.Fatalf("breakdown order %v, want %v", order, want)
	}
	md := b.markdown(2)
	if !strings.Contains(md, "| accounts | account | 4.00 |") || !strings.Contains(md, "| 2 other tables | | 3.00 |") {
		t.Fatalf("breakdown:\n%s", md)
	}
}

// The floor on a small real database: accounts created by the pgbench
// ceiling's script (the service's writes), the account tables dumped and
// restored into a scratch database that is gone afterwards, every account
// and index restored, the foreign keys to the supplier and the import
// process left out; the account tables and the bookkeeping both grew.
func TestFloorRestoresTheAccountTables(t *testing.T) {
	if _, err := exec.LookPath("pgbench"); err != nil {
		t.Skip("pgbench not installed (make bench installs it)")
	}
	d := testutil.NewDatabase(t)
	ctx := context.Background()
	if _, err := d.DB.CreateSupplier(ctx, dataimport.Supplier{Code: "BENCH_ENERGY", PhoneRegion: "GB"}); err != nil {
		t.Fatal(err)
	}
	before, err := tableSizes(ctx, d.URL)
	if err != nil {
		t.Fatal(err)
	}
	s, err := preparePgbench(ctx, d.URL, "BENCH_ENERGY", mustJSON(realisticAccount("BENCH_ENERGY", "LG-0000001", 1)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if _, err := pgbench(ctx, d.URL, s.account, s.supID, "-c", "2", "-j", "2", "-t", "20"); err != nil {
		t.Fatal(err)
	}
	after, err := tableSizes(ctx, d.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := after["pgbench_free_numbers"]; ok {
		t.Fatal("the ceiling's scratch table counted as bookkeeping")
	}
	b := bookkeeping(before, after, 40)
	if b.AccountBytes <= 0 || b.BookkeepingBytes <= 0 {
		t.Fatalf("growth: account %d, bookkeeping %d bytes", b.AccountBytes, b.BookkeepingBytes)
	}

	f, err := measureFloor(ctx, d.URL, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("floor: %+v", *f)
	if f.RestoredAccounts != 40 {
		t.Fatalf("%d accounts restored, want 40", f.RestoredAccounts)
	}
	if f.SourceIndexes < len(accountTables) || f.RestoredIndexes != f.SourceIndexes {
		t.Fatalf("%d indexes restored of %d", f.RestoredIndexes, f.SourceIndexes)
	}
	if f.RestoreSeconds <= 0 || f.DumpBytes <= 0 {
		t.Fatalf("restore %.3f s, dump %d bytes", f.RestoreSeconds, f.DumpBytes)
	}
	if f.Redeclared < len(accountTables)-1 {
		t.Errorf("%d foreign keys checked per statement declared again in the floor's restore", f.Redeclared)
	}
	for _, fk := range []string{"accounts.accounts_import_process_id_fkey", "accounts.accounts_supplier_id_fkey"} {
		if !slices.Contains(f.LeftOut, fk) {
			t.Errorf("%s not left out: %v", fk, f.LeftOut)
		}
	}
	conn, err := pgx.Connect(ctx, d.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var scratch int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname = $1`, fmt.Sprintf("bench_floor_%d", os.Getpid())).Scan(&scratch); err != nil {
		t.Fatal(err)
	}
	if scratch != 0 {
		t.Fatalf("%d scratch database left behind", scratch)
	}
}
