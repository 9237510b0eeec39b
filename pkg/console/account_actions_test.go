package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// The account page offers Unskip on a skipped account and Retry creation on
// one whose last attempt failed; each is the importctl command's store
// method, audited under the operator, and refused (409) once done.
func TestConsoleUnskipAndRetryAccount(t *testing.T) {
	st, srv := consoleStack(t)
	sup := st.Supplier("ACME")
	ctx := context.Background()
	if err := st.DB.MarkSkipped(ctx, "ACME", "EXT-S"); err != nil {
		t.Fatal(err)
	}
	// EXT-F: staged, its creation attempt failed.
	if err := st.DB.Gorm().Exec(`WITH p AS (
			INSERT INTO import_processes (supplier_id, external_account_number, staged_version, attempt, status, v2_status)
			VALUES (?, 'EXT-F', 1, 1, 'IN_PROGRESS', 'IN_PROGRESS') RETURNING id)
		INSERT INTO import_process_versions (process_id, version, payload) SELECT id, 1, '{}' FROM p`, sup.ID).Error; err != nil {
		t.Fatal(err)
	}
	var pid int64
	st.DB.Gorm().Raw(`SELECT id FROM import_processes WHERE external_account_number = 'EXT-F'`).Scan(&pid)
	if err := st.DB.FinishAttempt(ctx, pid, 1, postgres.OutcomeFailed, dataimport.Errorf("product_not_found", "No product X.")); err != nil {
		t.Fatal(err)
	}
	b := loggedIn(t, st, srv.URL, "alice")

	skipped := "/suppliers/ACME/accounts?number=EXT-S"
	if p := b.do(http.MethodGet, skipped, nil); !strings.Contains(p.Body, `id="unskip"`) || strings.Contains(p.Body, `id="retry-creation"`) {
		t.Fatalf("skipped account page: %d %.2000s", p.Status, p.Body)
	}
	if p := b.post(skipped, "/suppliers/ACME/accounts/unskip", url.Values{"external": {"EXT-S"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("unskip: %d %s", p.Status, p.Body)
	}
	if p := b.do(http.MethodGet, skipped, nil); strings.Contains(p.Body, `id="unskip"`) || strings.Contains(p.Body, `id="skipped"`) {
		t.Errorf("after unskip: %.2000s", p.Body)
	}
	if p := b.post(skipped, "/suppliers/ACME/accounts/unskip", url.Values{"external": {"EXT-S"}}); p.Status != http.StatusConflict {
		t.Errorf("unskip again: %d %s", p.Status, p.Body)
	}

	failed := "/suppliers/ACME/accounts?number=EXT-F"
	if p := b.do(http.MethodGet, failed, nil); !strings.Contains(p.Body, `id="retry-creation"`) {
		t.Fatalf("failed account page: %d %.2000s", p.Status, p.Body)
	}
	if p := b.post(failed, "/suppliers/ACME/accounts/retry", url.Values{"external": {"EXT-F"}}); p.Status != http.StatusSeeOther {
		t.Fatalf("retry: %d %s", p.Status, p.Body)
	}
	var v2 string
	st.DB.Gorm().Raw(`SELECT v2_status FROM import_processes WHERE id = ?`, pid).Scan(&v2)
	if v2 != "PENDING" {
		t.Errorf("after the console's retry the account is %s, want PENDING", v2)
	}
	if p := b.post(failed, "/suppliers/ACME/accounts/retry", url.Values{"external": {"EXT-F"}}); p.Status != http.StatusConflict {
		t.Errorf("retry again: %d %s", p.Status, p.Body)
	}
	var actions []string
	st.DB.Gorm().Raw(`SELECT action FROM audit_log WHERE actor = 'operator:alice' AND action LIKE 'account.%' ORDER BY id`).Scan(&actions)
	if strings.Join(actions, " ") != "account.unskip account.retry" {
		t.Errorf("audit: %v", actions)
	}
}
