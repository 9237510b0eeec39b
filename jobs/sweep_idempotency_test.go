package jobs_test

import (
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/gridshift/dataimport/jobs"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// TestIdempotencySweeper: a pass deletes every expired key in bounded
// statements, and stops after MaxBatches of them; live keys stay.
func TestIdempotencySweeper(t *testing.T) {
	d := testutil.NewDatabase(t)
	org, err := d.DB.CreateOrganisation(t.Context(), "Sweep Partner")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(nil)
	for i := range 7 {
		r := postgres.IdempotencyRequest{OrganisationID: org.ID, Key: fmt.Sprintf("k-%d", i), Method: http.MethodPost, Path: "/p/", BodySHA256: sum[:]}
		if _, err := d.DB.ClaimIdempotencyKey(t.Context(), r, time.Hour, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	// Six expired (claims past their lease too), one live.
	if err := d.DB.Gorm().Exec(`UPDATE idempotency_keys SET expires_at = now() - interval '1 second',
		locked_until = now() - interval '1 second' WHERE key <> 'k-6'`).Error; err != nil {
		t.Fatal(err)
	}
	left := func() int64 {
		var n int64
		if err := d.DB.Gorm().Raw(`SELECT count(*) FROM idempotency_keys`).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	capped := &jobs.IdempotencySweeper{Store: d.DB, Log: quiet, Batch: 2, MaxBatches: 2}
	if n, err := capped.Once(t.Context()); err != nil || n != 4 {
		t.Fatalf("capped pass: %d %v, want 4", n, err)
	}
	full := &jobs.IdempotencySweeper{Store: d.DB, Log: quiet, Batch: 2}
	if n, err := full.Once(t.Context()); err != nil || n != 2 {
		t.Fatalf("second pass: %d %v, want the 2 left", n, err)
	}
	if n := left(); n != 1 {
		t.Fatalf("%d keys left, want the live one", n)
	}
}
