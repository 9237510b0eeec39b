package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The database's own ceiling: pgbench running the SQL writes of one staging
// and of one account creation (same rows into the same tables and indexes),
// with no HTTP, queue or validation in between.

const stageScript = `\set n random(1, 1000000000000)
WITH p AS (
  INSERT INTO import_processes (supplier_id, external_account_number, staged_version)
  VALUES (:sup, 'PGB-' || :client_id || '-' || :n, 1)
  ON CONFLICT (supplier_id, external_account_number) DO UPDATE
     SET staged_version = import_processes.staged_version + 1, modified_at = now(),
         v2_status = 'PENDING', scheduled = false, window_start = NULL, window_end = NULL
   WHERE import_processes.status = 'UNKNOWN' AND NOT import_processes.skipped
  RETURNING id, staged_version),
v AS (
  INSERT INTO import_process_versions (process_id, version, payload)
  SELECT id, staged_version, %s::jsonb FROM p)
INSERT INTO import_process_events (process_id, event, data)
SELECT id, 'EVENT_ACCOUNT_IMPORT_PROCESS_STAGED', jsonb_build_object('version', staged_version, 'api', 'v1') FROM p;
`

// accountScript stages and creates one account: the process, its version
// and their event, the v1 start (both views IN_PROGRESS, SCHEDULED and
// STARTED events), then in one transaction everything the worker writes,
// ending with the process PROCESSED, its attempt and its event. Like the
// worker's creation transaction it says it writes a new account
// (dataimport.creating), so neither bumps landed_version.
const accountScript = `SELECT nextval('pgbench_account_seq') AS n \gset
BEGIN;
SET LOCAL dataimport.creating = 'on';
WITH p AS (
  INSERT INTO import_processes (supplier_id, external_account_number, staged_version)
  VALUES (:sup, 'PGA-' || :n, 1) RETURNING id, staged_version),
v AS (
  INSERT INTO import_process_versions (process_id, version, payload)
  SELECT id, staged_version, %[1]s::jsonb FROM p)
INSERT INTO import_process_events (process_id, event, data)
SELECT id, 'EVENT_ACCOUNT_IMPORT_PROCESS_STAGED', jsonb_build_object('version', staged_version, 'api', 'v1') FROM p
RETURNING process_id \gset
WITH s AS (
  UPDATE import_processes
     SET status = 'IN_PROGRESS', v2_status = 'IN_PROGRESS', scheduled = true, window_start = NULL, window_end = NULL,
         attempt = attempt + 1, dry_run = false, modified_at = now()
   WHERE id = :process_id RETURNING id, attempt, dry_run)
INSERT INTO import_process_events (process_id, event, data)
SELECT s.id, ev.name, jsonb_build_object('attempt', s.attempt, 'dry_run', s.dry_run, 'api', 'v1')
  FROM s, unnest(ARRAY['EVENT_ACCOUNT_IMPORT_PROCESS_SCHEDULED', 'EVENT_ACCOUNT_IMPORT_PROCESS_STARTED']) WITH ORDINALITY AS ev(name, n) ORDER BY ev.n;
INSERT INTO accounts (platform_account_number, supplier_id, import_process_id, external_account_number, account_type, details, transfer_balance)
VALUES (%[2]s, :sup, :process_id, 'PGA-' || :n, 'DOMESTIC', %[3]s::jsonb, 120.50)
RETURNING id AS account_id \gset
INSERT INTO account_customers (account_id, position, given_name, family_name, title, email, mobile, landline, date_of_birth, customer_preferences)
VALUES (:account_id, 0, 'Alex', 'Loadtest', 'Mx', 'alex@example.co.uk', '+447400000001', '+442079460018', '1980-04-12', '{"opted_into_sms":true}'),
       (:account_id, 1, 'Sam', 'Loadtest', 'Mx', 'sam@example.co.uk', '+447400000002', '+442079460018', '1980-04-12', '{"opted_into_sms":true}');
WITH a AS (
  INSERT INTO supply_addresses (account_id, position, supply_address1, supply_address2, supply_address3, supply_postcode, customer_at_supply_address_from_date)
  VALUES (:account_id, 0, '1 Meter Street', 'Westminster', 'London', 'SW1A 2AA', '2022-11-01') RETURNING id),
m AS (
  INSERT INTO meter_points (account_id, supply_address_id, mpxn, fuel, supply_start_date)
  SELECT :account_id, a.id, v.mpxn, v.fuel, '2023-01-01' FROM a, (VALUES ('1000000000001', 'ELECTRICITY'), ('9000000001', 'GAS')) v(mpxn, fuel)
  RETURNING id)
INSERT INTO agreements (meter_point_id, product_code, valid_from, valid_to)
SELECT m.id, x.code, x.f::date, x.t::date FROM m, (VALUES ('FIX-12M-23', '2023-01-01', '2023-12-31'), ('VAR-24', '2024-01-01', NULL)) x(code, f, t);
WITH mt AS (
  INSERT INTO meters (account_id, meter_point_id, serial_number)
  SELECT :account_id, id, 'M' || mpxn FROM meter_points WHERE account_id = :account_id RETURNING id, serial_number)
INSERT INTO meter_registers (meter_id, register_id, number_of_digits, rate_type)
SELECT mt.id, g::text, 5, 'STANDARD' FROM mt, generate_series(1, CASE WHEN mt.serial_number LIKE 'M1%%' THEN 2 ELSE 1 END) g;
INSERT INTO transfer_readings (meter_id, register_id, reading_date, reading_value, reading_type)
SELECT r.meter_id, r.register_id, '2023-01-01', 12345, 'CUSTOMER' FROM meter_registers r JOIN meters m ON m.id = r.meter_id WHERE m.account_id = :account_id;
INSERT INTO customer_psr (customer_id, code, effective_from)
SELECT id, '09', '2023-01-01' FROM account_customers WHERE account_id = :account_id AND position = 0;
INSERT INTO account_payment_schedules (account_id, position, means, start_date, frequency, amount)
VALUES (:account_id, 0, 'DIRECT_DEBIT', current_date, 'MONTHLY', 85.50), (:account_id, 1, 'CARD', '2023-01-01', 'QUARTERLY', 240.00);
INSERT INTO statements (account_id, period_from, period_to) VALUES (:account_id, current_date, current_date + 30) RETURNING id AS statement_id \gset
INSERT INTO account_notes (account_id, body, document_paths, is_pinned, created_at)
VALUES (:account_id, 'Migrated from the legacy billing system.', '[]', false, now()),
       (:account_id, 'Customer prefers e-mail contact.', '[]', true, now());
INSERT INTO account_transactions (account_id, statement_id, transaction_id, type, transaction_date, amount, balance_effect, data)
VALUES (:account_id, :statement_id, 'C1', 'CHARGE', current_date, 45.20, 45.20, '{"type":"CHARGE"}'),
       (:account_id, :statement_id, 'R1', 'CREDIT', current_date, 10.00, -10.00, '{"type":"CREDIT"}'),
       (:account_id, :statement_id, 'P1', 'PAYMENT', current_date, 30.00, -30.00, '{"type":"PAYMENT"}'),
       (:account_id, :statement_id, 'P2', 'REPAYMENT', current_date, 5.00, 5.00, '{"type":"REPAYMENT"}'),
       (:account_id, :statement_id, 'S1', 'CHARGE', current_date, 12.34, 12.34, '{"type":"CHARGE"}');
UPDATE accounts SET balance = transfer_balance + (SELECT sum(balance_effect) FROM account_transactions WHERE account_id = :account_id) WHERE id = :account_id;
WITH done AS (
  UPDATE import_processes SET status = 'COMPLETED', v2_status = 'PROCESSED', platform_account_number = %[2]s,
         account_created_at = now(), latest_error = NULL, dry_run = false, modified_at = now()
   WHERE id = :process_id RETURNING id, attempt, platform_account_number),
a AS (
  INSERT INTO import_attempts (process_id, attempt, outcome, platform_account_number)
  SELECT id, attempt, 'COMPLETED', platform_account_number FROM done)
INSERT INTO import_process_events (process_id, event, data)
SELECT id, 'EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED', jsonb_build_object('attempt', attempt, 'platform_account_number', platform_account_number) FROM done;
COMMIT;
`

type pgbenchResult struct {
	StageTPS, AccountTPS float64
}

// runPgbench measures both scripts for seconds each with clients connections.
func runPgbench(ctx context.Context, dbURL, supplier string, clients, seconds int, payload []byte) (pgbenchResult, error) {
	s, err := preparePgbench(ctx, dbURL, supplier, payload)
	if err != nil {
		return pgbenchResult{}, err
	}
	defer s.close()
	run := []string{"-c", strconv.Itoa(clients), "-j", "2", "-T", strconv.Itoa(seconds)}
	var res pgbenchResult
	if res.StageTPS, err = pgbench(ctx, dbURL, s.stage, s.supID, run...); err != nil {
		return res, err
	}
	if res.AccountTPS, err = pgbench(ctx, dbURL, s.account, s.supID, run...); err != nil {
		return res, err
	}
	return res, nil
}

// pgbenchScripts are the two scripts written for one database and supplier.
type pgbenchScripts struct {
	dir, stage, account string
	supID               int64
}

func (s pgbenchScripts) close() { _ = os.RemoveAll(s.dir) }

// preparePgbench writes the scripts for supplier's accounts with payload as
// the staged version, and what they need in the database.
func preparePgbench(ctx context.Context, dbURL, supplier string, payload []byte) (pgbenchScripts, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return pgbenchScripts{}, fmt.Errorf("pgbench setup: %w", err)
	}
	defer conn.Close(ctx)
	var s pgbenchScripts
	if err := conn.QueryRow(ctx, `SELECT id FROM import_suppliers WHERE code = $1`, supplier).Scan(&s.supID); err != nil {
		return s, fmt.Errorf("pgbench setup: supplier %s: %w", supplier, err)
	}
	if _, err := conn.Exec(ctx, `CREATE SEQUENCE IF NOT EXISTS pgbench_account_seq`); err != nil {
		return s, fmt.Errorf("pgbench setup: %w", err)
	}
	// Platform numbers A-<3 hex><5 hex>: pick a 3-hex prefix no real account
	// uses. With many accounts (make bench-scale) every prefix is taken: then
	// free numbers are drawn up front and each account looks its own up.
	number := ""
	for range 200 {
		p := fmt.Sprintf("%03X", rand.IntN(4096))
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM accounts WHERE platform_account_number LIKE $1`, "A-"+p+"%").Scan(&n); err != nil {
			return s, err
		}
		if n == 0 {
			number = "'A-" + p + "' || lpad(upper(to_hex(:n)), 5, '0')"
			break
		}
	}
	if number == "" {
		var err error
		if number, err = freeNumbers(ctx, conn, 300000); err != nil {
			return s, err
		}
	}
	if s.dir, err = os.MkdirTemp("", "loadgen-pgbench-"); err != nil {
		return s, err
	}
	lit := sqlLiteral(string(payload))
	details := sqlLiteral(`{"billing_name":"Alex Loadtest","sales_channel":"DIRECT"}`)
	s.stage, s.account = filepath.Join(s.dir, "stage.sql"), filepath.Join(s.dir, "account.sql")
	if err := os.WriteFile(s.stage, []byte(fmt.Sprintf(stageScript, lit)), 0o600); err != nil {
		s.close()
		return s, err
	}
	if err := os.WriteFile(s.account, []byte(fmt.Sprintf(accountScript, lit, number, details)), 0o600); err != nil {
		s.close()
		return s, err
	}
	return s, nil
}

var tpsRe = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// pgbench runs script as run says (clients, threads, duration or count)
// and returns its rate.
func pgbench(ctx context.Context, dbURL, script string, supID int64, run ...string) (float64, error) {
	checkpoint(ctx, dbURL)
	args := append([]string{"-n"}, run...)
	args = append(args, "-D", "sup="+strconv.FormatInt(supID, 10), "-f", script, dbURL)
	cmd := exec.CommandContext(ctx, "pgbench", args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("pgbench %s: %w\n%s", filepath.Base(script), err, out)
	}
	m := tpsRe.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("pgbench %s: no tps in output:\n%s", filepath.Base(script), out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// checkpoint starts a measurement from a fresh checkpoint, ours and
// pgbench's alike. Otherwise one of them may run into a checkpoint the
// other's writes triggered, and pay for its I/O and the full-page images
// after it. Without the right to CHECKPOINT, the run goes on and says so.
func checkpoint(ctx context.Context, dbURL string) {
	if dbURL == "" {
		return
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err == nil {
		_, err = conn.Exec(ctx, "CHECKPOINT")
		_ = conn.Close(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "warning: no CHECKPOINT before the measurement:", err)
	}
}

func sqlLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// freeNumbers draws n platform numbers no account has, numbered after the
// pgbench sequence's current value, into pgbench_free_numbers, and returns
// the SQL expression of :n's number (one primary-key lookup per account).
func freeNumbers(ctx context.Context, conn *pgx.Conn, n int) (string, error) {
	var last int64
	if err := conn.QueryRow(ctx, `SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM pgbench_account_seq`).Scan(&last); err != nil {
		return "", fmt.Errorf("pgbench setup: %w", err)
	}
	if _, err := conn.Exec(ctx, `DROP TABLE IF EXISTS pgbench_free_numbers, pgbench_number_draws;
		CREATE UNLOGGED TABLE pgbench_number_draws (number text NOT NULL)`); err != nil {
		return "", fmt.Errorf("pgbench setup: %w", err)
	}
	rows := make([][]any, 0, n)
	seen := make(map[uint32]bool, n)
	for len(rows) < n {
		v := rand.Uint32()
		if !seen[v] {
			seen[v] = true
			rows = append(rows, []any{fmt.Sprintf("A-%08X", v)})
		}
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"pgbench_number_draws"}, []string{"number"}, pgx.CopyFromRows(rows)); err != nil {
		return "", fmt.Errorf("pgbench setup: %w", err)
	}
	// Numbers real accounts hold are left out; the rest numbered without gaps.
	for _, q := range []string{`CREATE UNLOGGED TABLE pgbench_free_numbers AS
		SELECT ` + strconv.FormatInt(last, 10) + ` + row_number() OVER () AS n, d.number FROM pgbench_number_draws d
		 WHERE NOT EXISTS (SELECT 1 FROM accounts a WHERE a.platform_account_number = d.number)`,
		`ALTER TABLE pgbench_free_numbers ADD PRIMARY KEY (n)`, `DROP TABLE pgbench_number_draws`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return "", fmt.Errorf("pgbench setup: %w", err)
		}
	}
	return "(SELECT number FROM pgbench_free_numbers WHERE n = :n)", nil
}
