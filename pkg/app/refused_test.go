package app_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestDataRefusedByDatabaseFailsAttempt stands in for a database rule that
// validation does not know (a future migration, say): the worker must end
// the attempt as failed with a clear latest_error, free the slot and answer
// the waiting create with a 400, instead of retrying what can never succeed.
func TestDataRefusedByDatabaseFailsAttempt(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker()
	ctx := context.Background()
	must(t, p.DB.SetConcurrencyLimit(ctx, 1)) // a leaked slot would make the next create a 429
	cases := []struct {
		name, rule, undo, mention string
		dryRun                    bool
	}{
		// First, while no account exists whose -42.50 would not fit.
		{"data exception (class 22): a narrower column",
			`ALTER TABLE accounts ALTER COLUMN transfer_balance TYPE numeric(3, 2)`,
			`ALTER TABLE accounts ALTER COLUMN transfer_balance TYPE numeric(16, 2)`, "", false},
		{"integrity (class 23): a CHECK validation lacks",
			`ALTER TABLE account_customers ADD CONSTRAINT test_no_alice CHECK (given_name <> 'Alice') NOT VALID`,
			`ALTER TABLE account_customers DROP CONSTRAINT test_no_alice`, "test_no_alice", false},
		{"integrity (class 23), dry run",
			`ALTER TABLE account_customers ADD CONSTRAINT test_no_alice CHECK (given_name <> 'Alice') NOT VALID`,
			`ALTER TABLE account_customers DROP CONSTRAINT test_no_alice`, "test_no_alice", true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			external := "EXT-R" + string(rune('A'+i))
			p.stage(external)
			must(t, p.DB.Gorm().Exec(tc.rule).Error)
			r := p.create(external, map[string]any{"dry_run": tc.dryRun})
			must(t, p.DB.Gorm().Exec(tc.undo).Error)
			if r.Status != http.StatusBadRequest || r.JSON()["code"] != "data_refused" {
				t.Fatalf("create: want 400 data_refused, got %d %s", r.Status, r.Body)
			}
			detail, _ := r.JSON()["detail"].(string)
			t.Logf("answered: %s", detail)
			if !strings.Contains(detail, tc.mention) {
				t.Errorf("detail does not name %q: %s", tc.mention, detail)
			}
			for _, leak := range []string{"INSERT", "VALUES", "currval", "SQLSTATE", "pgx", "ERROR:"} {
				if strings.Contains(detail, leak) {
					t.Errorf("detail leaks %q: %s", leak, detail)
				}
			}
			st := p.status(external)
			if le, _ := st["latest_error"].(map[string]any); st["status"] != "UNKNOWN" || le["code"] != "data_refused" {
				t.Fatalf("status: %v", st)
			}
			var outcomes []string
			must(t, p.DB.Gorm().Raw(`SELECT a.outcome FROM import_attempts a JOIN import_processes p ON p.id = a.process_id
				WHERE p.external_account_number = ?`, external).Scan(&outcomes).Error)
			if len(outcomes) != 1 || outcomes[0] != "FAILED" {
				t.Fatalf("attempts: %v, want one FAILED", outcomes)
			}
			// The slot is free (limit 1) and the account can be created now
			// that the data fits.
			if r := p.create(external, nil); r.Status != http.StatusCreated {
				t.Fatalf("create after the rule went: %d %s", r.Status, r.Body)
			}
		})
	}
	if logs := p.Logs.String(); strings.Contains(logs, "will retry") {
		t.Errorf("the worker retried a refusal:\n%.2000s", logs)
	}
}
