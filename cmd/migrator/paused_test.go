package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// push waits out a Paused supplier (per account and per bulk part, up to
// --paused-wait) and creates everything once it is Ongoing; Complete is
// final.
func TestPushWaitsOutPausedSupplier(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.st.DB.SetSupplierStatus(ctx, "DEMO_ENERGY", dataimport.SupplierPaused))
	go func() {
		time.Sleep(3 * time.Second)
		_ = e.st.DB.SetSupplierStatus(ctx, "DEMO_ENERGY", dataimport.SupplierOngoing)
	}()
	file := e.writeFile("accounts.ndjson", validLines(t, "PAUSE", 4))
	out, err := e.push(file, filepath.Join(e.dir, "report.csv"), "--paused-wait", "1m")
	if err != nil || !strings.Contains(out, "accounts 4: completed 4,") {
		t.Fatalf("push through a pause: %v\n%s", err, out)
	}
	bulkFile := e.writeFile("bulk.ndjson", validLines(t, "PAUSEB", 4))
	must(e.st.DB.SetSupplierStatus(ctx, "DEMO_ENERGY", dataimport.SupplierPaused))
	go func() {
		time.Sleep(3 * time.Second)
		_ = e.st.DB.SetSupplierStatus(ctx, "DEMO_ENERGY", dataimport.SupplierOngoing)
	}()
	if out, err := e.push(bulkFile, filepath.Join(e.dir, "bulk.csv"), "--bulk", "--paused-wait", "1m"); err != nil {
		t.Fatalf("bulk push through a pause: %v\n%s", err, out)
	}
	e.checkAllImported(8)

	must(e.st.DB.SetSupplierStatus(ctx, "DEMO_ENERGY", dataimport.SupplierComplete))
	start := time.Now()
	late := e.writeFile("late.ndjson", validLines(t, "LATE", 1))
	report := filepath.Join(e.dir, "late.csv")
	if out, err := e.push(late, report, "--paused-wait", "1m"); err == nil {
		t.Fatalf("push to a Complete supplier succeeded:\n%s", out)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("waited %s for a Complete supplier", time.Since(start))
	}
	rows := readReport(t, report)
	if len(rows) != 1 || rows[0].Code != codeNotOngoing {
		t.Fatalf("report %+v", rows)
	}
}
