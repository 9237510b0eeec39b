package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// importctl job list and show read jobs of every organisation; retry
// answers how many lines went back and refuses a cancelled job.
func TestJobListShowRetry(t *testing.T) {
	d := testutil.NewDatabase(t)
	t.Setenv("DATABASE_URL", d.URL)
	mustCtl(t, "supplier", "create", "ACME")
	mustCtl(t, "supplier", "create", "BETA")
	mustCtl(t, "org", "create", "One")
	mustCtl(t, "org", "create", "Two")
	// Two organisations' jobs; ACME's has two failed lines whose account
	// failed its creation (product_not_found) and one failed otherwise.
	if err := d.DB.Gorm().Exec(`
		WITH j AS (
			INSERT INTO import_jobs (organisation_id, supplier_id, state, n_received, n_failed)
			SELECT o.id, s.id, 'COMPLETED', 3, 3 FROM organisations o, import_suppliers s WHERE o.name = 'One' AND s.code = 'ACME' RETURNING id, supplier_id
		), p AS (
			INSERT INTO import_processes (supplier_id, external_account_number, staged_version, attempt, v2_status)
			SELECT j.supplier_id, 'EXT-' || n, 1, 1, 'ERRORED' FROM j, generate_series(1, 3) n RETURNING id, external_account_number
		)
		INSERT INTO import_job_records (job_id, line, external_account_number, payload, outcome, errors, process_id, staged_version, attempt)
		SELECT j.id, substr(p.external_account_number, 5)::int, p.external_account_number, '{}', 'failed',
		       CASE WHEN p.external_account_number = 'EXT-3' THEN '{"code": "server_error", "detail": "x"}'
		            ELSE '{"code": "account_failed_validation", "detail": "x", "errors": [{"code": "product_not_found", "attr": "a", "detail": "x"}]}' END::jsonb,
		       p.id, 1, 1
		  FROM j, p`).Error; err != nil {
		t.Fatal(err)
	}
	if err := d.DB.Gorm().Exec(`INSERT INTO import_jobs (organisation_id, supplier_id, state)
		SELECT o.id, s.id, 'CANCELLED' FROM organisations o, import_suppliers s WHERE o.name = 'Two' AND s.code = 'BETA'`).Error; err != nil {
		t.Fatal(err)
	}
	var jobs []jobOut
	if err := json.Unmarshal([]byte(mustCtl(t, "job", "list", "--json")), &jobs); err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || jobs[0].ID != 2 || jobs[0].State != "CANCELLED" || jobs[1].ImportSupplier != "ACME" || jobs[1].Counters.Failed != 3 {
		t.Fatalf("job list: %+v", jobs)
	}
	if out := mustCtl(t, "job", "list", "--supplier", "ACME"); !strings.Contains(out, "COMPLETED") || strings.Contains(out, "CANCELLED") {
		t.Errorf("job list --supplier ACME:\n%s", out)
	}
	if _, err := importctl(t, "job", "list", "--state", "DONE"); err == nil {
		t.Error("job list --state DONE accepted")
	}
	if out := mustCtl(t, "job", "retry", "1", "--code", "product_not_found", "--json"); !strings.Contains(out, `"retried": 2`) {
		t.Errorf("job retry: %s", out)
	}
	if out := mustCtl(t, "job", "show", "1"); !strings.Contains(out, "PROCESSING") || !strings.Contains(out, "staged 2") || !strings.Contains(out, "failed 1") {
		t.Errorf("job show after the retry:\n%s", out)
	}
	if _, err := importctl(t, "job", "retry", "2"); err == nil || !strings.Contains(err.Error(), "CANCELLED") {
		t.Errorf("retry of a cancelled job: %v", err)
	}
	if _, err := importctl(t, "job", "show", "x"); err == nil {
		t.Error("job show x accepted")
	}
}
