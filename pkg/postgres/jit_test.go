package postgres_test

import (
	"testing"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// TestSessionsRunWithoutJIT: every session of the store's pools has JIT
// off, whatever the server's setting (a landed read whose estimate crossed
// jit_above_cost compiled on every execution and took seconds).
func TestSessionsRunWithoutJIT(t *testing.T) {
	d := testutil.NewDatabase(t)
	var server string
	if err := d.DB.Gorm().Raw(`SELECT boot_val FROM pg_settings WHERE name = 'jit'`).Scan(&server).Error; err != nil {
		t.Fatal(err)
	}
	// Several sessions at once, so more than one connection of the pool answers.
	errs := make(chan error, 8)
	got := make(chan string, 8)
	for range 8 {
		go func() {
			var v string
			err := d.DB.Gorm().Raw(`SELECT current_setting('jit') FROM pg_sleep(0.05)`).Scan(&v).Error
			errs <- err
			got <- v
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		if v := <-got; v != "off" {
			t.Errorf("a session has jit %q (server default %q)", v, server)
		}
	}
}
