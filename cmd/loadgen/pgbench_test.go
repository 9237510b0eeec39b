package main

import (
	"context"
	"fmt"
	"os/exec"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// The pgbench ceiling's scripts run on the current schema (its CHECKs hold
// the v1 and v2 statuses together) and write what the service writes: the
// process in both views, its versions, its attempt and one timeline event per
// state change. A few transactions by count, not a measurement.
func TestPgbenchScriptsWriteWhatTheServiceWrites(t *testing.T) {
	if _, err := exec.LookPath("pgbench"); err != nil {
		t.Skip("pgbench not installed (make bench installs it)")
	}
	d := testutil.NewDatabase(t)
	ctx := context.Background()
	if _, err := d.DB.CreateSupplier(ctx, dataimport.Supplier{Code: "BENCH_ENERGY", PhoneRegion: "GB"}); err != nil {
		t.Fatal(err)
	}
	s, err := preparePgbench(ctx, d.URL, "BENCH_ENERGY", mustJSON(realisticAccount("BENCH_ENERGY", "LG-0000001", 1)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	run := []string{"-c", "2", "-j", "2", "-t", "5"}
	for _, script := range []string{s.stage, s.account} {
		if _, err := pgbench(ctx, d.URL, script, s.supID, run...); err != nil {
			t.Fatal(err)
		}
	}
	var rows []struct {
		External, Status, V2Status string
		Scheduled                  bool
		StagedVersion, Attempt     int
		Events                     string
		Attempts                   int
	}
	err = d.DB.Gorm().Raw(`SELECT p.external_account_number AS external, p.status, p.v2_status, p.scheduled, p.staged_version, p.attempt,
			(SELECT string_agg(e.event, ' ' ORDER BY e.id) FROM import_process_events e WHERE e.process_id = p.id) AS events,
			(SELECT count(*) FROM import_attempts a WHERE a.process_id = p.id AND a.outcome = 'COMPLETED') AS attempts
		FROM import_processes p ORDER BY p.id`).Scan(&rows).Error
	if err != nil {
		t.Fatal(err)
	}
	staged, created := 0, 0
	for _, r := range rows {
		got := fmt.Sprintf("%s %s %v v%d a%d [%s] %d", r.Status, r.V2Status, r.Scheduled, r.StagedVersion, r.Attempt, r.Events, r.Attempts)
		var want string
		switch r.External[:4] {
		case "PGB-":
			staged++
			want = "UNKNOWN PENDING false v1 a0 [EVENT_ACCOUNT_IMPORT_PROCESS_STAGED] 0"
		case "PGA-":
			created++
			want = "COMPLETED PROCESSED true v1 a1 [EVENT_ACCOUNT_IMPORT_PROCESS_STAGED EVENT_ACCOUNT_IMPORT_PROCESS_SCHEDULED " +
				"EVENT_ACCOUNT_IMPORT_PROCESS_STARTED EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED] 1"
		}
		if got != want {
			t.Errorf("%s: %s, want %s", r.External, got, want)
		}
	}
	if staged != 10 || created != 10 {
		t.Fatalf("%d staged and %d created processes, want 10 of each", staged, created)
	}
	var accounts int64
	if err := d.DB.Gorm().Raw(`SELECT count(*) FROM accounts a JOIN import_processes p ON p.id = a.import_process_id
		AND p.platform_account_number = a.platform_account_number`).Scan(&accounts).Error; err != nil {
		t.Fatal(err)
	}
	if accounts != 10 {
		t.Fatalf("%d accounts tied to their process, want 10", accounts)
	}
	var schedules int64
	if err := d.DB.Gorm().Raw(`SELECT count(*) FROM account_payment_schedules`).Scan(&schedules).Error; err != nil {
		t.Fatal(err)
	}
	if schedules != 20 {
		t.Fatalf("%d payment schedules, want the realistic account's 2 per account", schedules)
	}
}
