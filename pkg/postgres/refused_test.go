package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// TestDataRefused: SQLSTATE classes 22 and 23 are the data's fault (a failed
// attempt, a 400), everything else is worth a retry, and so are the unique
// keys only our own writers collide on.
func TestDataRefused(t *testing.T) {
	pg := func(code, table, column, constraint string) error {
		return fmt.Errorf("create account: %w", &pgconn.PgError{Code: code, TableName: table, ColumnName: column, ConstraintName: constraint,
			Message: "new row violates something", Detail: "Failing row contains (secret value)."})
	}
	cases := []struct {
		name    string
		err     error
		refused bool
		mention []string // what the detail must name
	}{
		{"nil", nil, false, nil},
		{"not a database error", errors.New("boom"), false, nil},
		{"cancelled", context.Canceled, false, nil},
		{"numeric overflow (22003)", pg("22003", "", "", ""), true, []string{"too large"}},
		{"text too long (22001)", pg("22001", "accounts", "external_account_number", ""), true, []string{"accounts.external_account_number", "longer"}},
		{"NUL in text (22021)", pg("22021", "", "", ""), true, []string{"characters"}},
		{"bad date (22008)", pg("22008", "", "", ""), true, []string{"date"}},
		{"other data exception (22P02)", pg("22P02", "", "", ""), true, []string{"cannot be stored"}},
		{"check (23514)", pg("23514", "statements", "", "statements_check"), true, []string{"table statements", "rule statements_check"}},
		{"not null (23502)", pg("23502", "meter_points", "mpxn", ""), true, []string{"meter_points.mpxn", "missing"}},
		{"foreign key (23503)", pg("23503", "accounts", "", "accounts_supplier_id_fkey"), true, []string{"accounts_supplier_id_fkey"}},
		{"partner's unique key (23505)", pg("23505", "account_transactions", "", "account_transactions_account_id_transaction_id_key"), true,
			[]string{"account_transactions_account_id_transaction_id_key", "unique"}},
		{"platform number collision (23505): the store redraws", pg("23505", "accounts", "", "accounts_platform_account_number_key"), false, nil},
		{"second run of one creation (23505)", pg("23505", "accounts", "", "accounts_import_process_id_key"), false, nil},
		{"attempt recorded meanwhile (23505)", pg("23505", "import_attempts", "", "import_attempts_pkey"), false, nil},
		{"concurrent staging (23505)", pg("23505", "import_processes", "", "import_processes_supplier_id_external_account_number_key"), false, nil},
		{"our guard: stale attempt (DIA01)", pg("DIA01", "", "", ""), false, nil},
		{"raise exception (P0001)", pg("P0001", "", "", ""), false, nil},
		{"serialization failure (40001)", pg("40001", "", "", ""), false, nil},
		{"deadlock (40P01)", pg("40P01", "", "", ""), false, nil},
		{"connection lost (08006)", pg("08006", "", "", ""), false, nil},
		{"admin shutdown (57P01)", pg("57P01", "", "", ""), false, nil},
		{"statement timeout (57014)", pg("57014", "", "", ""), false, nil},
		{"malformed code", pg("23", "", "", ""), false, nil},
		{"joined with another error", errors.Join(errors.New("rollback failed"), pg("23514", "account_transactions", "", "account_transactions_amount_check")),
			true, []string{"account_transactions_amount_check"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := postgres.DataRefused(tc.err)
			if (e != nil) != tc.refused {
				t.Fatalf("DataRefused = %v, want refused=%v", e, tc.refused)
			}
			if e == nil {
				return
			}
			if e.Code != dataimport.CodeDataRefused || len(e.Errors) != 0 {
				t.Errorf("error %+v", e)
			}
			for _, m := range tc.mention {
				if !strings.Contains(e.Detail, m) {
					t.Errorf("detail does not mention %q: %s", m, e.Detail)
				}
			}
			// Postgres' own message and detail (which may quote the row) stay in the logs.
			for _, leak := range []string{"secret", "Failing row", "violates", "SQLSTATE", "create account"} {
				if strings.Contains(e.Detail, leak) {
					t.Errorf("detail leaks %q: %s", leak, e.Detail)
				}
			}
		})
	}
}
