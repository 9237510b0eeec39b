package main

import (
	"context"
	"os"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// The compacted measure rewrites the bookkeeping tables only: the
// compaction must write no account table (its dead rows would count).
func TestCompactionWritesNoAccountTable(t *testing.T) {
	src, err := os.ReadFile("../../pkg/postgres/job_compact.go")
	if err != nil {
		t.Fatal(err)
	}
	var written []string
	for _, m := range regexp.MustCompile(`(?i)\b(?:UPDATE|DELETE\s+FROM|INSERT\s+INTO)\s+([a-z_]+)`).FindAllStringSubmatch(string(src), -1) {
		if !slices.Contains(written, m[1]) {
			written = append(written, m[1])
		}
	}
	if !slices.Contains(written, "import_job_records") || !slices.Contains(written, "import_process_versions") {
		t.Fatalf("job_compact.go's statements not found: %v", written)
	}
	for _, name := range written {
		if isAccountTable(name) {
			t.Errorf("job_compact.go writes account table %s: the compacted measure does not rewrite it", name)
		}
	}
}

// waitOlderTransactions counts a session of the database whose snapshot is
// older than the call, waits for it up to the limit, and counts nothing
// once it has ended.
func TestWaitOlderTransactions(t *testing.T) {
	d := testutil.NewDatabase(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, d.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	old, err := pgx.Connect(ctx, d.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close(ctx)
	tx, err := old.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT count(*) FROM pg_class`); err != nil { // takes the snapshot
		t.Fatal(err)
	}
	t0 := time.Now()
	if n, err := waitOlderTransactions(ctx, conn, 300*time.Millisecond); err != nil || n != 1 {
		t.Fatalf("with an older snapshot open: %d, %v; want 1", n, err)
	}
	if time.Since(t0) < 300*time.Millisecond {
		t.Fatalf("did not wait for the older snapshot (%v)", time.Since(t0))
	}
	go func() {
		time.Sleep(200 * time.Millisecond)
		_ = tx.Rollback(ctx)
	}()
	if n, err := waitOlderTransactions(ctx, conn, 10*time.Second); err != nil || n != 0 {
		t.Fatalf("once it ended: %d, %v; want 0", n, err)
	}
}

// On a database without jobs, the compacted measure compacts nothing,
// rewrites the tables and measures them.
func TestMeasureCompactedWithoutJobs(t *testing.T) {
	d := testutil.NewDatabase(t)
	ctx := context.Background()
	before, err := tableSizes(ctx, d.URL)
	if err != nil {
		t.Fatal(err)
	}
	res, err := measureCompacted(ctx, d.URL, before, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Jobs != 0 || res.Compacted != 0 || res.OlderTransactions != 0 || len(res.Bookkeeping.Tables) == 0 ||
		res.VacuumedTables != len(before)-len(accountTables) || res.AccountRowsChanged != 0 {
		t.Fatalf("%+v", res)
	}
}
