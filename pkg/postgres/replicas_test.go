package postgres_test

import (
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// TestLiveReplicasHidesTheSilentAndSweepsTheDead: a heartbeat older than
// the TTL is not listed, one ten TTLs old is deleted, a clean shutdown
// deletes its own row, and the settings come back as written.
func TestLiveReplicasHidesTheSilentAndSweepsTheDead(t *testing.T) {
	t.Parallel()
	db := testutil.NewDatabase(t).DB
	ctx := t.Context()
	settings := dataimport.ReplicaSettings{PaymentVendors: []string{"STRIPE"}, Markets: []string{"GB"}, Switches: map[string]string{"SLOT_LEASE": "2m0s"}}
	for _, id := range []string{"live", "silent", "dead"} {
		if err := db.Heartbeat(ctx, postgres.ReplicaRow{Instance: id, Role: "worker", Host: "h", PID: 1, Version: "devel",
			Fingerprint: settings.Fingerprint(), Settings: settings, Busy: 3, Ready: true, StartedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Gorm().Exec(`UPDATE replicas SET seen_at = now() - CASE instance WHEN 'silent' THEN interval '1 minute' ELSE interval '1 hour' END
		WHERE instance <> 'live'`).Error; err != nil {
		t.Fatal(err)
	}
	live, err := db.LiveReplicas(ctx, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(live) != 1 || live[0].Instance != "live" || live[0].Busy != 3 || live[0].Settings.PaymentVendors[0] != "STRIPE" ||
		live[0].Fingerprint != settings.Fingerprint() {
		t.Fatalf("live replicas %+v", live)
	}
	var left []string
	if err := db.Gorm().Raw(`SELECT instance FROM replicas ORDER BY instance`).Scan(&left).Error; err != nil {
		t.Fatal(err)
	}
	if len(left) != 2 || left[0] != "live" || left[1] != "silent" {
		t.Fatalf("rows left %q, want the dead one swept", left)
	}
	if err := db.ForgetReplica(ctx, "live"); err != nil {
		t.Fatal(err)
	}
	if live, _ := db.LiveReplicas(ctx, 15*time.Second); len(live) != 0 {
		t.Fatalf("after a clean shutdown: %+v", live)
	}
}
