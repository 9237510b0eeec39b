package postgres_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/market/gb"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// These tests run CreateAccount against a real, private, migrated Postgres
// database (testutil.NewDatabase); nothing is mocked. Every top-level test
// owns its database, so whole-table counts prove "nothing else was written".

// creationNow is the worker's clock in these tests: fixed, so statement
// periods and timestamps are exact.
var creationNow = time.Date(2025, 6, 15, 10, 30, 0, 0, time.UTC)

var platformNumberRe = regexp.MustCompile(`^A-[0-9A-F]{8}$`)

// accountTables is the account and every table created with it.
var accountTables = []string{"accounts", "account_customers", "supply_addresses", "meter_points", "agreements",
	"statements", "account_notes", "account_transactions", "welcome_emails",
	"meters", "meter_registers", "transfer_readings", "customer_psr", "account_payment_schedules", "payment_instructions"}

type env struct {
	tb     testing.TB
	ctx    context.Context
	db     *postgres.DB
	g      *gorm.DB
	teamID int64
}

func newEnv(tb testing.TB) *env {
	tb.Helper()
	d := testutil.NewDatabase(tb)
	e := &env{tb: tb, ctx: context.Background(), db: d.DB, g: d.DB.Gorm()}
	team, err := d.DB.CreateTeam(e.ctx, "Migrations")
	e.must(err)
	e.teamID = team.ID
	return e
}

func (e *env) must(err error) {
	e.tb.Helper()
	if err != nil {
		e.tb.Fatal(err)
	}
}

func (e *env) supplier(code string, welcome bool) dataimport.Supplier {
	e.tb.Helper()
	s, err := e.db.CreateSupplier(e.ctx, dataimport.Supplier{Code: code, WelcomeEmail: welcome})
	e.must(err)
	return s
}

// payload is the sample account of pkg/dataimport for supplier and external,
// edited as a JSON object (numbers kept exact).
func payload(tb testing.TB, supplier, external string, edit func(map[string]any)) []byte {
	tb.Helper()
	out, err := samplePayload(supplier, external, edit)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func samplePayload(supplier, external string, edit func(map[string]any)) ([]byte, error) {
	raw, err := os.ReadFile("../dataimport/testdata/account_valid.json")
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	m["import_supplier"], m["external_account_number"] = supplier, external
	if edit != nil {
		edit(m)
	}
	return json.Marshal(m)
}

// stage stages the (edited) sample account and returns its process.
func (e *env) stage(s dataimport.Supplier, external string, edit func(map[string]any)) int64 {
	e.tb.Helper()
	res, err := e.db.Stage(e.ctx, s, external, payload(e.tb, s.Code, external, edit))
	e.must(err)
	return res.ProcessID
}

func (e *env) start(processID int64, dryRun bool) int {
	e.tb.Helper()
	var last int
	e.scalar(&last, `SELECT attempt FROM import_processes WHERE id = ?`, processID)
	attempt, started, err := e.db.StartAttempt(e.ctx, processID, last, e.teamID, 0, dryRun)
	e.must(err)
	if !started {
		e.tb.Fatalf("process %d: attempt not started", processID)
	}
	return attempt
}

// input is what the worker builds: the staged payload loaded back from
// Postgres, decoded and validated with the supplier's rules.
func (e *env) input(processID int64, attempt int, dryRun bool) postgres.CreationInput {
	e.tb.Helper()
	lp, err := e.db.LoadForCreation(e.ctx, processID)
	e.must(err)
	acc, err := dataimport.DecodeAccount(lp.Payload, dataimport.AccountRules{PhoneRegion: lp.Supplier.PhoneRegion, Today: dataimport.DateOf(creationNow),
		PaymentVendors: []string{"STRIPE"}})
	e.must(err)
	return postgres.CreationInput{ProcessID: processID, Attempt: attempt, DryRun: dryRun, Supplier: lp.Supplier, Account: acc, Now: creationNow}
}

// prepare stages, starts an attempt and builds the input in one go.
func (e *env) prepare(s dataimport.Supplier, external string, dryRun bool, edit func(map[string]any)) postgres.CreationInput {
	e.tb.Helper()
	pid := e.stage(s, external, edit)
	return e.input(pid, e.start(pid, dryRun), dryRun)
}

// tryPrepare is prepare for goroutines other than the test's.
func (e *env) tryPrepare(s dataimport.Supplier, external string, edit func(map[string]any)) (postgres.CreationInput, error) {
	body, err := samplePayload(s.Code, external, edit)
	if err != nil {
		return postgres.CreationInput{}, err
	}
	st, err := e.db.Stage(e.ctx, s, external, body)
	if err != nil {
		return postgres.CreationInput{}, err
	}
	attempt, started, err := e.db.StartAttempt(e.ctx, st.ProcessID, 0, e.teamID, 0, false)
	if err != nil || !started {
		return postgres.CreationInput{}, fmt.Errorf("start attempt: started=%v: %w", started, err)
	}
	lp, err := e.db.LoadForCreation(e.ctx, st.ProcessID)
	if err != nil {
		return postgres.CreationInput{}, err
	}
	acc, err := dataimport.DecodeAccount(lp.Payload, dataimport.AccountRules{PhoneRegion: lp.Supplier.PhoneRegion, Today: dataimport.DateOf(creationNow)})
	if err != nil {
		return postgres.CreationInput{}, err
	}
	return postgres.CreationInput{ProcessID: st.ProcessID, Attempt: attempt, Supplier: lp.Supplier, Account: acc, Now: creationNow}, nil
}

func (e *env) scalar(dst any, query string, args ...any) {
	e.tb.Helper()
	e.must(e.g.WithContext(e.ctx).Raw(query, args...).Row().Scan(dst))
}

func (e *env) count(table string) int {
	e.tb.Helper()
	var n int
	e.scalar(&n, "SELECT count(*) FROM "+table)
	return n
}

// counts is the row count of the account tables and import_attempts.
func (e *env) counts() map[string]int {
	e.tb.Helper()
	out := map[string]int{}
	for _, t := range append(accountTables, "import_attempts") {
		out[t] = e.count(t)
	}
	return out
}

func (e *env) wantCounts(want map[string]int) {
	e.tb.Helper()
	got := e.counts()
	for _, t := range append(accountTables, "import_attempts") {
		if got[t] != want[t] {
			e.tb.Errorf("%s: %d rows, want %d (all counts %v)", t, got[t], want[t], got)
		}
	}
}

func (e *env) wantNothingWritten() {
	e.tb.Helper()
	e.wantCounts(map[string]int{})
}

// sampleCounts are the rows the sample account makes (no welcome e-mails).
func sampleCounts(accounts int) map[string]int {
	return map[string]int{"accounts": accounts, "account_customers": 2 * accounts, "supply_addresses": accounts,
		"meter_points": 2 * accounts, "agreements": 4 * accounts, "statements": accounts, "account_notes": 2 * accounts,
		"account_transactions": 3 * accounts, "import_attempts": accounts}
}

type procState struct {
	Status                string
	Attempt               int
	DryRun                bool
	LatestError           *string
	PlatformAccountNumber *string
	AccountCreatedAt      *time.Time
}

func (e *env) proc(processID int64) procState {
	e.tb.Helper()
	var p procState
	e.must(e.g.WithContext(e.ctx).Raw(`SELECT status, attempt, dry_run, latest_error::text AS latest_error,
		platform_account_number, account_created_at FROM import_processes WHERE id = ?`, processID).Row().
		Scan(&p.Status, &p.Attempt, &p.DryRun, &p.LatestError, &p.PlatformAccountNumber, &p.AccountCreatedAt))
	return p
}

func (e *env) wantInProgress(processID int64, attempt int) {
	e.tb.Helper()
	p := e.proc(processID)
	if p.Status != "IN_PROGRESS" || p.Attempt != attempt || p.PlatformAccountNumber != nil || p.AccountCreatedAt != nil {
		e.tb.Errorf("process = %+v, want IN_PROGRESS attempt %d with no account", p, attempt)
	}
}

type attemptRow struct {
	Attempt               int
	Outcome               string
	Error                 *string
	PlatformAccountNumber *string
}

func (e *env) attempts(processID int64) []attemptRow {
	e.tb.Helper()
	var rows []attemptRow
	e.must(e.g.WithContext(e.ctx).Raw(`SELECT attempt, outcome, error::text AS error, platform_account_number
		FROM import_attempts WHERE process_id = ? ORDER BY attempt`, processID).Scan(&rows).Error)
	return rows
}

func (e *env) create(in postgres.CreationInput) postgres.CreationResult {
	e.tb.Helper()
	res, err := e.db.CreateAccount(e.ctx, in)
	e.must(err)
	if res.AlreadyCreated || !platformNumberRe.MatchString(res.PlatformAccountNumber) || res.AccountID == 0 {
		e.tb.Fatalf("CreateAccount = %+v, want a new account", res)
	}
	return res
}

// expectedBalance is the balance rule written out independently of the
// code under test: transfer balance, plus charges, supply charges and
// repayments, minus credits and payments.
func expectedBalance(a *dataimport.Account) decimal.Decimal {
	b := decimal.Zero
	if a.TransferBalance != nil {
		b = a.TransferBalance.Decimal
	}
	for _, t := range a.CurrentStatementTransactions {
		switch t.Type {
		case "CHARGE", "SUPPLY_CHARGE", "REPAYMENT":
			b = b.Add(t.Amount.Decimal)
		case "CREDIT", "PAYMENT":
			b = b.Sub(t.Amount.Decimal)
		default:
			panic("unknown transaction type " + t.Type)
		}
	}
	return b
}

func TestCreateAccountHappyPath(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	parent := t
	for _, welcome := range []bool{false, true} {
		t.Run(fmt.Sprintf("welcome_email=%v", welcome), func(t *testing.T) {
			e.tb = t
			defer func() { e.tb = parent }()
			s := e.supplier(fmt.Sprintf("SUP_%v", welcome), welcome)
			before := e.counts()
			in := e.prepare(s, "EXT-0001", false, nil)
			res := e.create(in)
			after := e.counts()
			delta := map[string]int{}
			for k, v := range after {
				delta[k] = v - before[k]
			}
			want := sampleCounts(1)
			if welcome {
				want["welcome_emails"] = 2 // both customers have an e-mail
			}
			for _, tbl := range append(accountTables, "import_attempts") {
				if delta[tbl] != want[tbl] {
					t.Errorf("%s: %d new rows, want %d", tbl, delta[tbl], want[tbl])
				}
			}

			// The account row.
			var acc struct {
				ID                    int64
				PlatformAccountNumber string
				SupplierID            int64
				ImportProcessID       int64
				ExternalAccountNumber string
				AccountType           string
				Balance               string
				TransferBalance       string
				CreatedAt             time.Time
				Details               string
			}
			e.must(e.g.Raw(`SELECT id, platform_account_number, supplier_id, import_process_id, external_account_number,
				account_type, balance::text AS balance, transfer_balance::text AS transfer_balance, created_at, details::text AS details
				FROM accounts WHERE platform_account_number = ?`, res.PlatformAccountNumber).Scan(&acc).Error)
			if acc.ID != res.AccountID || acc.SupplierID != s.ID || acc.ImportProcessID != in.ProcessID ||
				acc.ExternalAccountNumber != "EXT-0001" || acc.AccountType != "DOMESTIC" || !acc.CreatedAt.Equal(creationNow) {
				t.Errorf("account row = %+v (result %+v)", acc, res)
			}
			// -42.50 + 12.50 (CHARGE) - 55.00 (PAYMENT) + 90.21 (SUPPLY_CHARGE)
			if want := expectedBalance(in.Account).StringFixed(2); acc.Balance != want || want != "5.21" {
				t.Errorf("balance = %s, want %s (= 5.21)", acc.Balance, want)
			}
			if acc.TransferBalance != "-42.50" {
				t.Errorf("transfer_balance = %s, want -42.50", acc.TransferBalance)
			}
			var details map[string]any
			e.must(json.Unmarshal([]byte(acc.Details), &details))
			if details["billing_name"] != "Dr A Smith" || details["sales_channel"] != "PRICE_COMPARISON" || details["customers"] != nil ||
				details["current_statement_transactions"] != nil || len(details["metadata"].([]any)) != 2 {
				t.Errorf("details = %s", acc.Details)
			}

			// Every signed effect is stored, and they sum to the balance move.
			var effects []string
			e.must(e.g.Raw(`SELECT balance_effect::text FROM account_transactions WHERE account_id = ? ORDER BY transaction_id`, acc.ID).
				Scan(&effects).Error)
			if fmt.Sprint(effects) != "[12.50 -55.00 90.21]" {
				t.Errorf("balance effects = %v", effects)
			}

			// One open statement, the period FirstStatementPeriod gives.
			from, to := in.Account.FirstStatementPeriod(dataimport.DateOf(creationNow))
			var st []struct{ PeriodFrom, PeriodTo, Status string }
			e.must(e.g.Raw(`SELECT period_from::text AS period_from, period_to::text AS period_to, status FROM statements WHERE account_id = ?`,
				acc.ID).Scan(&st).Error)
			if len(st) != 1 || st[0].Status != "OPEN" || st[0].PeriodFrom != from.String() || st[0].PeriodTo != to.String() ||
				from.String() != "2025-06-01" || to.String() != "2025-06-30" {
				t.Errorf("statements = %+v, want one OPEN 2025-06-01..2025-06-30 (%s..%s)", st, from, to)
			}
			var inPeriod int
			e.scalar(&inPeriod, `SELECT count(*) FROM account_transactions t JOIN statements s ON s.id = t.statement_id
				WHERE t.account_id = ? AND s.account_id = t.account_id AND t.transaction_date BETWEEN s.period_from AND s.period_to
				AND t.original_date IS NULL AND t.description = ''`, acc.ID)
			if inPeriod != 3 {
				t.Errorf("%d transactions in the open statement unmoved, want 3", inPeriod)
			}

			// Children are attached to this account, in order, normalised.
			var cust []struct {
				ID                  int64
				Position            int
				GivenName           string
				Email               string
				Mobile              string
				DateOfBirth         string
				CustomerPreferences string
			}
			e.must(e.g.Raw(`SELECT id, position, given_name, email, mobile, date_of_birth::text AS date_of_birth,
				customer_preferences::text AS customer_preferences FROM account_customers WHERE account_id = ? ORDER BY position`, acc.ID).
				Scan(&cust).Error)
			if len(cust) != 2 || cust[0].GivenName != "Alice" || cust[0].Mobile != "+447400123456" || cust[0].DateOfBirth != "1980-04-12" ||
				cust[1].GivenName != "Bob" || cust[1].Position != 1 {
				t.Errorf("customers = %+v", cust)
			}
			var prefs dataimport.CustomerPreferences
			if len(cust) == 2 {
				// Bob sent no preferences: every flag is false, stored as an object, not JSON null.
				if err := json.Unmarshal([]byte(cust[1].CustomerPreferences), &prefs); err != nil || cust[1].CustomerPreferences == "null" || prefs != (dataimport.CustomerPreferences{}) {
					t.Errorf("Bob's preferences = %s", cust[1].CustomerPreferences)
				}
			}
			var agreementsOfAccount int
			e.scalar(&agreementsOfAccount, `SELECT count(*) FROM agreements a JOIN meter_points m ON m.id = a.meter_point_id
				JOIN supply_addresses s ON s.id = m.supply_address_id WHERE m.account_id = ? AND s.account_id = ?`, acc.ID, acc.ID)
			if agreementsOfAccount != 4 {
				t.Errorf("%d agreements reachable from the account's meter points, want 4", agreementsOfAccount)
			}

			// The process and the attempt record.
			p := e.proc(in.ProcessID)
			if p.Status != "COMPLETED" || p.PlatformAccountNumber == nil || *p.PlatformAccountNumber != res.PlatformAccountNumber ||
				p.AccountCreatedAt == nil || !p.AccountCreatedAt.Equal(creationNow) || p.LatestError != nil || p.DryRun {
				t.Errorf("process = %+v", p)
			}
			at := e.attempts(in.ProcessID)
			if len(at) != 1 || at[0].Attempt != in.Attempt || at[0].Outcome != postgres.OutcomeCompleted || at[0].Error != nil ||
				at[0].PlatformAccountNumber == nil || *at[0].PlatformAccountNumber != res.PlatformAccountNumber {
				t.Errorf("import_attempts = %+v", at)
			}
			out, err := e.db.Outcome(e.ctx, in.ProcessID, in.Attempt)
			if err != nil || out.Outcome != postgres.OutcomeCompleted || out.PlatformAccountNumber != res.PlatformAccountNumber || out.Error != nil {
				t.Errorf("Outcome = %+v, %v", out, err)
			}

			// Welcome e-mails: one per customer with an e-mail, only if the supplier wants them.
			var mails []struct {
				ID         int64
				CustomerID int64
				Email      string
				SentAt     *time.Time
			}
			e.must(e.g.Raw(`SELECT id, customer_id, email, sent_at FROM welcome_emails WHERE account_id = ? ORDER BY id`, acc.ID).
				Scan(&mails).Error)
			if !welcome {
				if len(mails) != 0 || len(res.WelcomeEmailIDs) != 0 {
					t.Errorf("supplier without welcome e-mail queued %+v (ids %v)", mails, res.WelcomeEmailIDs)
				}
				return
			}
			if len(mails) != 2 || len(cust) != 2 || len(res.WelcomeEmailIDs) != 2 ||
				mails[0].CustomerID != cust[0].ID || mails[0].Email != "alice.smith@example.co.uk" || mails[0].ID != res.WelcomeEmailIDs[0] ||
				mails[1].CustomerID != cust[1].ID || mails[1].Email != "bob.smith@example.co.uk" || mails[1].ID != res.WelcomeEmailIDs[1] ||
				mails[0].SentAt != nil || mails[1].SentAt != nil {
				t.Errorf("welcome e-mails = %+v, ids %v, customers %+v", mails, res.WelcomeEmailIDs, cust)
			}
		})
	}
}

func TestCreateAccountWelcomeEmailOnlyForCustomersWithEmail(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.supplier("WELCOME", true)
	in := e.prepare(s, "EXT-NOMAIL", false, func(m map[string]any) {
		delete(m["customers"].([]any)[1].(map[string]any), "email")
	})
	res := e.create(in)
	var emails []string
	e.must(e.g.Raw(`SELECT email FROM welcome_emails`).Scan(&emails).Error)
	if len(emails) != 1 || emails[0] != "alice.smith@example.co.uk" || len(res.WelcomeEmailIDs) != 1 {
		t.Errorf("welcome e-mails %v (ids %v), want only Alice's", emails, res.WelcomeEmailIDs)
	}
}

func TestCreateAccountStatementPeriod(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.supplier("PERIODS", false)
	for i, tc := range []struct {
		closing, due     any // nil: field absent
		wantFrom, wantTo string
	}{
		{"2025-05-31", "2025-06-30", "2025-06-01", "2025-06-30"},
		{"2025-05-31", nil, "2025-06-01", "2025-06-30"},
		{"2025-01-30", nil, "2025-01-31", "2025-02-27"}, // clamped month end, less one day
		{nil, nil, "2025-06-15", "2025-07-14"},          // defaults: creation day + 1 month - 1 day
		{nil, "2025-07-31", "2025-06-15", "2025-07-31"},
	} {
		in := e.prepare(s, fmt.Sprintf("EXT-P%d", i), false, func(m map[string]any) {
			delete(m, "last_statement_closing_date")
			delete(m, "next_bill_due_date")
			delete(m, "current_statement_transactions")
			if tc.closing != nil {
				m["last_statement_closing_date"] = tc.closing
			}
			if tc.due != nil {
				m["next_bill_due_date"] = tc.due
			}
		})
		res := e.create(in)
		from, to := in.Account.FirstStatementPeriod(dataimport.DateOf(creationNow))
		var got struct{ PeriodFrom, PeriodTo, Status string }
		e.must(e.g.Raw(`SELECT period_from::text AS period_from, period_to::text AS period_to, status FROM statements WHERE account_id = ?`,
			res.AccountID).Scan(&got).Error)
		if got.PeriodFrom != tc.wantFrom || got.PeriodTo != tc.wantTo || got.Status != "OPEN" ||
			from.String() != tc.wantFrom || to.String() != tc.wantTo {
			t.Errorf("case %d: statement %+v, FirstStatementPeriod %s..%s, want OPEN %s..%s", i, got, from, to, tc.wantFrom, tc.wantTo)
		}
		var bal string
		e.scalar(&bal, `SELECT balance::text FROM accounts WHERE id = ?`, res.AccountID)
		if bal != "-42.50" {
			t.Errorf("case %d: balance without transactions = %s, want the transfer balance -42.50", i, bal)
		}
	}
}

func TestCreateAccountIdempotent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.supplier("IDEM", true)
	in := e.prepare(s, "EXT-0001", false, nil)
	first := e.create(in)
	want := sampleCounts(1)
	want["welcome_emails"] = 2
	e.wantCounts(want)

	for range 2 { // a retried job, then once more
		again, err := e.db.CreateAccount(e.ctx, e.input(in.ProcessID, in.Attempt, false))
		if err != nil || !again.AlreadyCreated || again.PlatformAccountNumber != first.PlatformAccountNumber || len(again.WelcomeEmailIDs) != 0 {
			t.Fatalf("second CreateAccount = %+v, %v; want AlreadyCreated %s", again, err, first.PlatformAccountNumber)
		}
	}
	e.wantCounts(want)
	if at := e.attempts(in.ProcessID); len(at) != 1 || at[0].Outcome != postgres.OutcomeCompleted {
		t.Errorf("import_attempts = %+v", at)
	}
	// A completed process starts no new attempt.
	if _, started, err := e.db.StartAttempt(e.ctx, in.ProcessID, in.Attempt, e.teamID, 0, false); err != nil || started {
		t.Errorf("StartAttempt on a completed process: started=%v err=%v", started, err)
	}
}

func TestCreateAccountStaleAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.supplier("STALE", true)

	// Staged but never started: no attempt is in progress.
	pid := e.stage(s, "EXT-0001", nil)
	if _, err := e.db.CreateAccount(e.ctx, e.input(pid, 0, false)); !errors.Is(err, postgres.ErrStaleAttempt) {
		t.Fatalf("CreateAccount for an UNKNOWN process: %v, want ErrStaleAttempt", err)
	}
	attempt := e.start(pid, false)
	for _, wrong := range []int{attempt - 1, attempt + 1} {
		if _, err := e.db.CreateAccount(e.ctx, e.input(pid, wrong, false)); !errors.Is(err, postgres.ErrStaleAttempt) {
			t.Fatalf("CreateAccount attempt %d while %d runs: %v, want ErrStaleAttempt", wrong, attempt, err)
		}
	}
	// A process that does not exist is stale too.
	in := e.input(pid, attempt, false)
	in.ProcessID = pid + 1000
	if _, err := e.db.CreateAccount(e.ctx, in); !errors.Is(err, postgres.ErrStaleAttempt) {
		t.Fatalf("CreateAccount for a missing process: %v, want ErrStaleAttempt", err)
	}
	e.wantNothingWritten()
	e.wantInProgress(pid, attempt)

	e.create(e.input(pid, attempt, false))
	want := sampleCounts(1)
	want["welcome_emails"] = 2
	e.wantCounts(want)
}

func TestCreateAccountDryRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.supplier("DRY", true)
	pid := e.stage(s, "EXT-0001", nil)
	attempt := e.start(pid, true)
	if p := e.proc(pid); !p.DryRun {
		t.Errorf("dry-run attempt: process %+v, want dry_run", p)
	}
	res, err := e.db.CreateAccount(e.ctx, e.input(pid, attempt, true))
	if !errors.Is(err, postgres.ErrDryRun) || res.PlatformAccountNumber != "" || res.AccountID != 0 {
		t.Fatalf("dry run = %+v, %v; want ErrDryRun", res, err)
	}
	e.wantNothingWritten()
	e.wantInProgress(pid, attempt)
	if _, err := e.db.Outcome(e.ctx, pid, attempt); !errors.Is(err, postgres.ErrAttemptRunning) {
		t.Errorf("Outcome before FinishAttempt: %v, want ErrAttemptRunning", err)
	}

	for range 2 { // FinishAttempt is idempotent per attempt
		e.must(e.db.FinishAttempt(e.ctx, pid, attempt, postgres.OutcomeDryRun, nil))
	}
	p := e.proc(pid)
	if p.Status != "UNKNOWN" || p.DryRun || p.PlatformAccountNumber != nil || p.LatestError != nil || p.Attempt != attempt {
		t.Errorf("after dry run: process %+v, want UNKNOWN", p)
	}
	if at := e.attempts(pid); len(at) != 1 || at[0].Outcome != postgres.OutcomeDryRun || at[0].Error != nil || at[0].PlatformAccountNumber != nil {
		t.Errorf("import_attempts = %+v, want one DRY_RUN", at)
	}
	if out, err := e.db.Outcome(e.ctx, pid, attempt); err != nil || out.Outcome != postgres.OutcomeDryRun {
		t.Errorf("Outcome = %+v, %v", out, err)
	}
	want := map[string]int{"import_attempts": 1}
	e.wantCounts(want)

	// The real thing afterwards.
	attempt2 := e.start(pid, false)
	if attempt2 != attempt+1 {
		t.Errorf("second attempt numbered %d, want %d", attempt2, attempt+1)
	}
	res = e.create(e.input(pid, attempt2, false))
	want = sampleCounts(1)
	want["import_attempts"], want["welcome_emails"] = 2, 2
	e.wantCounts(want)
	if len(res.WelcomeEmailIDs) != 2 {
		t.Errorf("welcome e-mail ids %v", res.WelcomeEmailIDs)
	}
	if p := e.proc(pid); p.Status != "COMPLETED" || *p.PlatformAccountNumber != res.PlatformAccountNumber {
		t.Errorf("process %+v", p)
	}
}

func TestCreateAccountConcurrentSameAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.supplier("RACE", true)
	in := e.prepare(s, "EXT-0001", false, nil)
	const callers = 20
	inputs := make([]postgres.CreationInput, callers)
	for i := range inputs {
		inputs[i] = e.input(in.ProcessID, in.Attempt, false) // each job decodes its own copy
	}
	results := make([]postgres.CreationResult, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range callers {
		wg.Go(func() {
			<-gate
			results[i], errs[i] = e.db.CreateAccount(context.Background(), inputs[i])
		})
	}
	close(gate)
	wg.Wait()

	created := 0
	for i := range callers {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if results[i].PlatformAccountNumber != results[0].PlatformAccountNumber || !platformNumberRe.MatchString(results[i].PlatformAccountNumber) {
			t.Errorf("caller %d got %q, caller 0 got %q", i, results[i].PlatformAccountNumber, results[0].PlatformAccountNumber)
		}
		if !results[i].AlreadyCreated {
			created++
		}
	}
	if created != 1 {
		t.Errorf("%d callers created the account, want exactly 1", created)
	}
	want := sampleCounts(1)
	want["welcome_emails"] = 2
	e.wantCounts(want)
}

func TestFinishAttemptFailed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.supplier("FAIL", false)
	pid := e.stage(s, "EXT-0001", nil)
	attempt := e.start(pid, false)
	failure := dataimport.ValidationError(dataimport.CodeAccountFailedValidation, "Account failed validation.",
		[]dataimport.FieldError{{Detail: "Enter a valid phone number.", Code: dataimport.CodeInvalidPhoneNumber, Attr: "customers.0.mobile"}})
	e.must(e.db.FinishAttempt(e.ctx, pid, attempt, postgres.OutcomeFailed, failure))

	p := e.proc(pid)
	if p.Status != "UNKNOWN" || p.LatestError == nil || p.PlatformAccountNumber != nil || p.DryRun {
		t.Fatalf("process %+v, want UNKNOWN with latest_error", p)
	}
	var stored map[string]any
	e.must(json.Unmarshal([]byte(*p.LatestError), &stored))
	if stored["code"] != dataimport.CodeAccountFailedValidation || stored["errors"].([]any)[0].(map[string]any)["attr"] != "customers.0.mobile" {
		t.Errorf("latest_error = %s", *p.LatestError)
	}
	dp, err := e.db.Process(e.ctx, s.ID, "EXT-0001")
	if err != nil || dp.LatestError == nil || dp.LatestError.Code != dataimport.CodeAccountFailedValidation || dp.Status != dataimport.StatusUnknown {
		t.Errorf("Process = %+v, %v", dp, err)
	}
	out, err := e.db.Outcome(e.ctx, pid, attempt)
	if err != nil || out.Outcome != postgres.OutcomeFailed || out.Error == nil || out.Error.Code != dataimport.CodeAccountFailedValidation ||
		len(out.Error.Errors) != 1 || out.Error.Errors[0] != failure.Errors[0] || out.PlatformAccountNumber != "" {
		t.Errorf("Outcome = %+v (error %+v), %v", out, out.Error, err)
	}
	// The failed attempt can no longer create the account.
	if _, err := e.db.CreateAccount(e.ctx, e.input(pid, attempt, false)); !errors.Is(err, postgres.ErrStaleAttempt) {
		t.Errorf("CreateAccount after FAILED: %v, want ErrStaleAttempt", err)
	}
	e.wantCounts(map[string]int{"import_attempts": 1})

	// An internal failure without a domain error still ends the attempt.
	attempt2 := e.start(pid, false)
	e.must(e.db.FinishAttempt(e.ctx, pid, attempt2, postgres.OutcomeFailed, nil))
	if p := e.proc(pid); p.Status != "UNKNOWN" {
		t.Errorf("after FAILED without error: %+v", p)
	}
	if out, err := e.db.Outcome(e.ctx, pid, attempt2); err != nil || out.Outcome != postgres.OutcomeFailed || out.Error != nil {
		t.Errorf("Outcome = %+v, %v", out, err)
	}

	// A later attempt succeeds and clears the error.
	attempt3 := e.start(pid, false)
	e.create(e.input(pid, attempt3, false))
	if p := e.proc(pid); p.Status != "COMPLETED" || p.LatestError != nil {
		t.Errorf("after success: %+v", p)
	}
	if at := e.attempts(pid); len(at) != 3 || at[0].Outcome != "FAILED" || at[1].Outcome != "FAILED" || at[2].Outcome != "COMPLETED" {
		t.Errorf("import_attempts = %+v", at)
	}
}

func TestCreateAccountMovesTransactionsIntoOpenStatement(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.supplier("MOVE", false)
	in := e.prepare(s, "EXT-0001", false, func(m map[string]any) {
		// Open statement 2025-06-01..2025-06-30; boundaries are inside.
		m["current_statement_transactions"] = []any{
			map[string]any{"transaction_id": "T1", "transaction_date": "2025-05-20", "amount": "10.00", "type": "CHARGE", "reason": "IMPORTED_CHARGE"},
			map[string]any{"transaction_id": "T2", "transaction_date": "2025-06-10", "amount": "2.50", "type": "CREDIT", "reason": "GENERAL_CREDIT"},
			map[string]any{"transaction_id": "T3", "transaction_date": "2025-07-03", "amount": "7.25", "type": "REPAYMENT", "payment_type": "DEBIT_CARD"},
			map[string]any{"transaction_id": "T4", "transaction_date": "2025-06-30", "amount": "0.10", "type": "PAYMENT", "payment_type": "DIRECT_CREDIT"},
			map[string]any{"transaction_id": "T5", "transaction_date": "2025-06-01", "amount": "0.20", "type": "CHARGE", "reason": "IMPORTED_CHARGE"},
		}
	})
	res := e.create(in)
	from, to := in.Account.FirstStatementPeriod(dataimport.DateOf(creationNow))

	var txs []struct {
		TransactionID   string
		TransactionDate string
		OriginalDate    *string
		Description     string
		BalanceEffect   string
	}
	e.must(e.g.Raw(`SELECT transaction_id, transaction_date::text AS transaction_date, original_date::text AS original_date,
		description, balance_effect::text AS balance_effect FROM account_transactions WHERE account_id = ? ORDER BY transaction_id`, res.AccountID).
		Scan(&txs).Error)
	moved := func(orig, placed string) (string, string) {
		o, _ := dataimport.ParseDate(orig)
		p, _ := dataimport.ParseDate(placed)
		return orig, dataimport.MovedDescription(o, p)
	}
	o1, d1 := moved("2025-05-20", "2025-06-01")
	o3, d3 := moved("2025-07-03", "2025-06-30")
	want := []struct{ id, date, orig, desc, effect string }{
		{"T1", "2025-06-01", o1, d1, "10.00"},
		{"T2", "2025-06-10", "", "", "-2.50"},
		{"T3", "2025-06-30", o3, d3, "7.25"},
		{"T4", "2025-06-30", "", "", "-0.10"},
		{"T5", "2025-06-01", "", "", "0.20"},
	}
	if len(txs) != len(want) {
		t.Fatalf("transactions %+v", txs)
	}
	for i, w := range want {
		g := txs[i]
		orig := ""
		if g.OriginalDate != nil {
			orig = *g.OriginalDate
		}
		if g.TransactionID != w.id || g.TransactionDate != w.date || orig != w.orig || g.Description != w.desc || g.BalanceEffect != w.effect {
			t.Errorf("transaction %d = %+v (original %q), want %+v", i, g, orig, w)
		}
	}

	var notes []struct {
		Body      string
		IsPinned  bool
		UnpinAt   *time.Time
		CreatedAt time.Time
	}
	e.must(e.g.Raw(`SELECT body, is_pinned, unpin_at, created_at FROM account_notes WHERE account_id = ? ORDER BY id`, res.AccountID).
		Scan(&notes).Error)
	wantBody := dataimport.MovedNoteBody(2, from, to)
	extra := 0
	for _, n := range notes {
		if n.Body == wantBody {
			extra++
			if !n.IsPinned || n.UnpinAt != nil || !n.CreatedAt.Equal(creationNow) {
				t.Errorf("moved note %+v, want pinned, created now, never unpinned", n)
			}
		}
	}
	if len(notes) != 3 || extra != 1 {
		t.Errorf("notes %+v, want the 2 sent plus exactly one %q", notes, wantBody)
	}

	// -42.50 + 10.00 - 2.50 + 7.25 - 0.10 + 0.20
	var bal string
	e.scalar(&bal, `SELECT balance::text FROM accounts WHERE id = ?`, res.AccountID)
	if want := expectedBalance(in.Account).StringFixed(2); bal != want || want != "-27.65" {
		t.Errorf("balance = %s, want %s (= -27.65)", bal, want)
	}
}

// TestCreateAccountFailureWritesNothing breaks the transaction early, in the
// middle and at its very last statement: nothing may remain, the attempt
// stays in progress (the job is retried) and the retry succeeds.
func TestCreateAccountFailureWritesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.supplier("BREAK", true)
	cases := []struct {
		name    string
		breakIt func(in *postgres.CreationInput) (undo func())
	}{
		{"customer insert fails", func(in *postgres.CreationInput) func() {
			in.Account.Customers[1].GivenName = "Bob\x00" // text cannot hold NUL
			return func() {}
		}},
		{"transaction insert fails", func(in *postgres.CreationInput) func() {
			txs := in.Account.CurrentStatementTransactions
			txs[2].TransactionID = txs[0].TransactionID // unique (account_id, transaction_id)
			return func() {}
		}},
		{"last statement fails", func(*postgres.CreationInput) func() {
			e.must(e.g.Exec(`CREATE FUNCTION test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
				BEGIN RAISE EXCEPTION 'refused by test'; END $$`).Error)
			e.must(e.g.Exec(`CREATE TRIGGER test_refuse BEFORE INSERT ON import_attempts FOR EACH ROW EXECUTE FUNCTION test_refuse()`).Error)
			return func() { e.must(e.g.Exec(`DROP FUNCTION test_refuse() CASCADE`).Error) }
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.tb = t
			in := e.prepare(s, fmt.Sprintf("EXT-B%d", i), false, nil)
			before := e.counts()
			broken := e.input(in.ProcessID, in.Attempt, false)
			undo := tc.breakIt(&broken)
			res, err := e.db.CreateAccount(e.ctx, broken)
			undo()
			if err == nil || errors.Is(err, postgres.ErrStaleAttempt) || errors.Is(err, postgres.ErrDryRun) {
				t.Fatalf("broken CreateAccount = %+v, %v; want a database error", res, err)
			}
			t.Logf("failed as intended: %v", err)
			if after := e.counts(); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("rows changed: before %v, after %v", before, after)
			}
			e.wantInProgress(in.ProcessID, in.Attempt)
			if len(e.attempts(in.ProcessID)) != 0 {
				t.Errorf("an attempt outcome was recorded")
			}
			e.create(in) // the retried job
		})
	}
	want := sampleCounts(len(cases))
	e.tb = t
	want["welcome_emails"] = 2 * len(cases)
	e.wantCounts(want)
}

// TestCreateAccountCancelledMidway holds CreateAccount inside its
// transaction (account_notes is locked by another session), cancels its
// context and checks that nothing was committed.
func TestCreateAccountCancelledMidway(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.supplier("CANCEL", true)
	in := e.prepare(s, "EXT-0001", false, nil)

	lock := e.g.Begin()
	e.must(lock.Error)
	e.must(lock.Exec(`LOCK TABLE account_notes IN ACCESS EXCLUSIVE MODE`).Error)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := e.db.CreateAccount(ctx, in)
		done <- err
	}()
	// Wait until it is blocked on account_notes, which its transaction
	// writes after the tables before it (the waiting lock is looked up).
	deadline := time.Now().Add(5 * time.Second)
	for {
		var waiting int
		e.scalar(&waiting, `SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			WHERE l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
			  AND c.relname = 'account_notes' AND NOT l.granted`)
		if waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			_ = lock.Rollback()
			t.Fatal("CreateAccount never blocked on account_notes")
		}
		time.Sleep(5 * time.Millisecond)
	}
	var uncommitted int
	e.scalar(&uncommitted, `SELECT count(*) FROM accounts`)
	cancel()
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		_ = lock.Rollback()
		t.Fatal("CreateAccount did not return after its context was cancelled")
	}
	e.must(lock.Rollback().Error)
	if err == nil {
		t.Fatal("cancelled CreateAccount succeeded")
	}
	t.Logf("cancelled: %v", err)
	// Let the server finish with the abandoned session before counting.
	for deadline = time.Now().Add(5 * time.Second); ; {
		var busy int
		e.scalar(&busy, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND pid <> pg_backend_pid() AND state IS DISTINCT FROM 'idle'`)
		if busy == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("abandoned session still busy")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if uncommitted != 0 {
		t.Errorf("an uncommitted account was visible")
	}
	e.wantNothingWritten()
	e.wantInProgress(in.ProcessID, in.Attempt)

	res := e.create(e.input(in.ProcessID, in.Attempt, false))
	want := sampleCounts(1)
	want["welcome_emails"] = 2
	e.wantCounts(want)
	if p := e.proc(in.ProcessID); *p.PlatformAccountNumber != res.PlatformAccountNumber {
		t.Errorf("process %+v", p)
	}
}

// TestCreateAccountRoundTripsDoNotGrowWithRows: a creation is two round
// trips, the ids drawn and the transaction pipelined in one (BEGIN, the
// guard and row lock, every write, COMMIT), so a bigger account costs no
// more of them.
func TestCreateAccountRoundTripsDoNotGrowWithRows(t *testing.T) {
	e := newEnv(t) // not parallel: it reads a package-wide counter
	s := e.supplier("ROUNDTRIPS", true)
	small := e.prepare(s, "EXT-SMALL", false, nil)
	big := e.prepare(s, "EXT-BIG", false, func(m map[string]any) {
		var txs, notes []any
		for i := range 60 {
			txs = append(txs, map[string]any{"transaction_id": fmt.Sprintf("T%d", i), "transaction_date": "2025-06-02",
				"amount": "1.01", "type": "CHARGE", "reason": "IMPORTED_CHARGE"})
			notes = append(notes, map[string]any{"body": fmt.Sprintf("note %d", i)})
		}
		m["current_statement_transactions"], m["notes"] = txs, notes
	})
	meters := e.prepare(s, "EXT-METERS", false, withMeterData(20)) // 20 meters, 40 registers, 40 readings
	before := postgres.CreationRoundTrips()
	e.create(small)
	smallN := postgres.CreationRoundTrips() - before
	e.create(big)
	bigN := postgres.CreationRoundTrips() - before - smallN
	e.create(meters)
	metersN := postgres.CreationRoundTrips() - before - smallN - bigN
	t.Logf("round trips per CreateAccount: %d", smallN)
	if smallN != 2 || bigN != 2 || metersN != 2 {
		t.Errorf("round trips: %d for the sample, %d with 60 transactions and 60 notes, %d with 20 meters; want 2 each", smallN, bigN, metersN)
	}
	var notes, txs int
	e.scalar(&notes, `SELECT count(*) FROM account_notes n JOIN accounts a ON a.id = n.account_id WHERE a.external_account_number = 'EXT-BIG'`)
	e.scalar(&txs, `SELECT count(*) FROM account_transactions x JOIN accounts a ON a.id = x.account_id WHERE a.external_account_number = 'EXT-BIG'`)
	if notes != 60 || txs != 60 {
		t.Errorf("big account stored %d notes and %d transactions, want 60 each", notes, txs)
	}
	var bal string
	e.scalar(&bal, `SELECT balance::text FROM accounts WHERE external_account_number = 'EXT-BIG'`)
	if bal != "18.10" { // -42.50 + 60 × 1.01
		t.Errorf("balance = %s, want 18.10", bal)
	}
}

// WORKER_DB_WRITERS: however many jobs create accounts at once, at most that
// many creation transactions run, and every account is still created.
func TestCreateAccountWritersBound(t *testing.T) {
	e := newEnv(t) // not parallel: it reads a package-wide gauge
	s := e.supplier("WRITERS", false)
	const jobs = 12
	inputs := make([]postgres.CreationInput, jobs)
	for i := range inputs {
		inputs[i] = e.prepare(s, fmt.Sprintf("EXT-W%02d", i), false, nil)
	}
	for _, tc := range []struct {
		writers int
		from    int
	}{{2, 0}, {0, jobs / 2}} { // 0: unbounded, the control
		e.db.SetCreationWriters(tc.writers)
		postgres.CreationWritersPeak()
		var wg sync.WaitGroup
		errs := make(chan error, jobs/2)
		for _, in := range inputs[tc.from : tc.from+jobs/2] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := e.db.CreateAccount(e.ctx, in)
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			e.must(err)
		}
		peak := postgres.CreationWritersPeak()
		t.Logf("writers %d: peak %d creation transactions at once", tc.writers, peak)
		if tc.writers > 0 && peak > int64(tc.writers) {
			t.Fatalf("writers %d: %d creation transactions at once", tc.writers, peak)
		}
	}
	if n := e.count("accounts"); n != jobs {
		t.Fatalf("%d accounts, want %d", n, jobs)
	}
}

// BenchmarkCreateAccount measures the worker's transaction alone: accounts
// are staged and their attempts started beforehand.
func BenchmarkCreateAccount(b *testing.B) { benchmarkCreateAccount(b, nil) }

// BenchmarkCreateAccountWithMeterData is the sample with meter data (issue
// 18): 2 meters, 5 registers, 5 transfer readings, 3 PSR entries more.
func BenchmarkCreateAccountWithMeterData(b *testing.B) { benchmarkCreateAccount(b, withMeterData(1)) }

func benchmarkCreateAccount(b *testing.B, edit func(map[string]any)) {
	e := newEnv(b)
	inputs := e.prepareMany(b, edit)
	before := postgres.CreationRoundTrips()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := e.db.CreateAccount(e.ctx, inputs[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "accounts/s")
	b.ReportMetric(float64(postgres.CreationRoundTrips()-before)/float64(b.N), "roundtrips/op")
	if got := e.count("accounts"); got != b.N {
		b.Fatalf("%d accounts, want %d", got, b.N)
	}
}

// TestCreateAccountPlatformNumberCollision: a drawn number that is taken is
// refused by the unique constraint and the whole transaction is redone with
// the next draw, leaving no trace of the first try.
func TestCreateAccountPlatformNumberCollision(t *testing.T) {
	e := newEnv(t) // not parallel: it swaps the package's number generator
	s := e.supplier("COLLIDE", false)
	first := e.create(e.prepare(s, "EXT-FIRST", false, nil))
	draws := []string{first.PlatformAccountNumber, first.PlatformAccountNumber, "A-0000C0DE"}
	restore := postgres.SetPlatformNumbers(func() (string, error) {
		n := draws[0]
		draws = draws[1:]
		return n, nil
	})
	defer restore()
	second := e.create(e.prepare(s, "EXT-SECOND", false, nil))
	if second.PlatformAccountNumber != "A-0000C0DE" || len(draws) != 0 {
		t.Fatalf("second account got %s with draws left %v", second.PlatformAccountNumber, draws)
	}
	var accounts, customers int
	e.scalar(&accounts, `SELECT count(*) FROM accounts`)
	e.scalar(&customers, `SELECT count(DISTINCT account_id) FROM account_customers`)
	if accounts != 2 || customers != 2 {
		t.Fatalf("accounts %d, accounts with customers %d; want 2 and 2", accounts, customers)
	}
}

// BenchmarkCreateJobAccounts measures a bulk job's creation transactions
// (100 accounts each, with meter data) alone: accounts are staged and their
// attempts started beforehand.
func BenchmarkCreateJobAccounts(b *testing.B) {
	e := newEnv(b)
	inputs := e.prepareMany(b, withMeterData(1))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 100 {
		_, errs := e.db.CreateJobAccounts(e.ctx, 0, inputs[i:min(i+100, b.N)])
		if err := errors.Join(errs...); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "accounts/s")
	if got := e.count("accounts"); got != b.N {
		b.Fatalf("%d accounts, want %d", got, b.N)
	}
}

// prepareMany stages b.N accounts (edited by edit, each with meter point
// numbers of its own, as real accounts have) of one supplier and starts
// their attempts, 8 at a time.
func (e *env) prepareMany(b *testing.B, edit func(map[string]any)) []postgres.CreationInput {
	s := e.supplier("BENCH", true)
	inputs := make([]postgres.CreationInput, b.N)
	errs := make([]error, b.N)
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 8 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < b.N; i = int(next.Add(1) - 1) {
				inputs[i], errs[i] = e.tryPrepare(s, fmt.Sprintf("EXT-%08d", i), ownMeterPoints(i, edit))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	return inputs
}

// ownMeterPoints applies edit, then gives the i-th account's meter points
// numbers no other account has: a valid MPAN core and an MPRN.
func ownMeterPoints(i int, edit func(map[string]any)) func(map[string]any) {
	return func(m map[string]any) {
		if edit != nil {
			edit(m)
		}
		for _, sa := range m["supply_addresses"].([]any) {
			for _, x := range sa.(map[string]any)["meter_points"].([]any) {
				mp := x.(map[string]any)
				if mp["fuel"] == "GAS" {
					mp["mpxn"] = fmt.Sprintf("9%09d", i)
				} else {
					first12 := fmt.Sprintf("1%011d", i)
					mp["mpxn"] = first12 + strconv.Itoa(gb.MPANCheckDigit(first12))
				}
			}
		}
	}
}
