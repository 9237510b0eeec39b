package postgres_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
	"gorm.io/gorm"
)

// TestControlCache: an API process (watcher) caches keys and suppliers, a
// change made elsewhere (operator) reaches it through NOTIFY, and its own
// writes are visible to it at once.
func TestControlCache(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	d := testutil.NewDatabase(t)
	operator := d.DB
	hash32 := make([]byte, 32)
	watcher, err := postgres.Open(ctx, d.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go watcher.WatchControl(wctx, slog.New(slog.DiscardHandler))
	waitFor(t, "cache live", watcher.ControlCacheLive)

	sup, err := operator.CreateSupplier(ctx, dataimport.Supplier{Code: "CACHE_CO", Status: dataimport.SupplierOngoing, PhoneRegion: "GB"})
	if err != nil {
		t.Fatal(err)
	}
	org, err := operator.CreateOrganisation(ctx, "Cache Org")
	if err != nil {
		t.Fatal(err)
	}
	if err := operator.CreateAPIKey(ctx, postgres.NewAPIKey{Organisation: org.Name, Suppliers: []string{sup.Code}, Prefix: "dik_cache", Hash: hash32}); err != nil {
		t.Fatal(err)
	}
	key, err := operator.APIKeyByHash(ctx, hash32)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "key visible", func() bool { _, err := watcher.ActiveAPIKey(ctx, key.ID); return err == nil })
	if _, err := watcher.SupplierForOrganisation(ctx, org.ID, sup.Code); err != nil {
		t.Fatal(err)
	}

	// Proof that reads are served from memory: a change that bypasses the
	// triggers (replica role) is not seen. A notification of the set-up
	// writes above may still be on its way and empty the cache between the
	// two reads; then the proof starts again, until a deadline.
	bypass := func(status string) {
		t.Helper()
		if err := operator.Gorm().WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("SET LOCAL session_replication_role = replica").Error; err != nil {
				return err
			}
			return tx.Exec("UPDATE import_suppliers SET status = ? WHERE id = ?", status, sup.ID).Error
		}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "a read served from memory", func() bool {
		bypass("Ongoing")
		if s, err := watcher.SupplierForOrganisation(ctx, org.ID, sup.Code); err != nil || s.Status != dataimport.SupplierOngoing {
			t.Fatalf("supplier: %+v %v", s, err)
		}
		bypass("Paused")
		s, err := watcher.SupplierForOrganisation(ctx, org.ID, sup.Code)
		return err == nil && s.Status == dataimport.SupplierOngoing
	})

	// An operator's change through the store reaches the watcher.
	if err := operator.SetSupplierStatus(ctx, sup.Code, dataimport.SupplierComplete); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "status change heard", func() bool {
		s, err := watcher.SupplierForOrganisation(ctx, org.ID, sup.Code)
		return err == nil && s.Status == dataimport.SupplierComplete
	})
	if err := operator.RevokeAPIKey(ctx, "dik_cache"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "revocation heard", func() bool {
		_, err := watcher.ActiveAPIKey(ctx, key.ID)
		return errors.Is(err, dataimport.ErrAPIKeyNotFound)
	})

	// The watcher's own writes are visible to it at once.
	if err := watcher.SetSupplierStatus(ctx, sup.Code, dataimport.SupplierPaused); err != nil {
		t.Fatal(err)
	}
	if s, _ := watcher.SupplierForOrganisation(ctx, org.ID, sup.Code); s.Status != dataimport.SupplierPaused {
		t.Fatalf("own write not seen: %+v", s)
	}
	if err := watcher.SetConcurrencyLimit(ctx, 7); err != nil {
		t.Fatal(err)
	}
	if n, ok, err := watcher.ConcurrencyLimit(ctx); err != nil || !ok || n != 7 {
		t.Fatalf("limit = %d %v %v", n, ok, err)
	}

	// Without the LISTEN connection nothing is cached.
	stop()
	waitFor(t, "cache off", func() bool { return !watcher.ControlCacheLive() })
	bypass("Ongoing")
	if s, _ := watcher.SupplierForOrganisation(ctx, org.ID, sup.Code); s.Status != dataimport.SupplierOngoing {
		t.Fatalf("uncached read is stale: %+v", s)
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
