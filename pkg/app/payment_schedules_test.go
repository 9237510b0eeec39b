package app_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// withPaymentData gives the sample account meter data, PSR, two payment
// schedules and a payment instruction at stripe-mock.
func withPaymentData(reference string) func(map[string]any) {
	return func(m map[string]any) {
		mp := m["supply_addresses"].([]any)[0].(map[string]any)["meter_points"].([]any)[0].(map[string]any)
		mp["meters"] = []any{map[string]any{"serial_number": "S95A000001",
			"registers":         []any{map[string]any{"register_id": "1", "number_of_digits": 5}},
			"transfer_readings": []any{map[string]any{"register_id": "1", "reading_date": "2024-02-01", "reading_value": "12345"}}}}
		m["customers"].([]any)[0].(map[string]any)["psr"] = []any{map[string]any{"code": "09"}}
		m["payment_schedules"] = []any{
			map[string]any{"means": "DIRECT_DEBIT", "start_date": "2025-07-01", "frequency": "MONTHLY", "amount": "85.50"},
			map[string]any{"means": "CASH_CHEQUE", "start_date": "2024-01-15", "frequency": "QUARTERLY", "amount": "120"},
		}
		m["payment_instructions"] = []any{map[string]any{"type": "DIRECT_DEBIT", "reference": reference, "vendor": "STRIPE"}}
	}
}

func (s *payStack) stageWith(external string, edit func(map[string]any)) {
	s.TB.Helper()
	if r := s.As(s.token, http.MethodPost, stagePath, s.edited(external, edit)); r.Status != http.StatusCreated {
		s.TB.Fatalf("stage %s: %d %s", external, r.Status, r.Body)
	}
}

// rows counts what the account with external brought, table by table.
func (s *payStack) rows(external string) map[string]int64 {
	s.TB.Helper()
	out := map[string]int64{}
	for table, q := range map[string]string{
		"meters":            `SELECT count(*) FROM meters x JOIN accounts a ON a.id = x.account_id WHERE a.external_account_number = ?`,
		"meter_registers":   `SELECT count(*) FROM meter_registers r JOIN meters x ON x.id = r.meter_id JOIN accounts a ON a.id = x.account_id WHERE a.external_account_number = ?`,
		"transfer_readings": `SELECT count(*) FROM transfer_readings r JOIN meters x ON x.id = r.meter_id JOIN accounts a ON a.id = x.account_id WHERE a.external_account_number = ?`,
		"customer_psr":      `SELECT count(*) FROM customer_psr p JOIN account_customers c ON c.id = p.customer_id JOIN accounts a ON a.id = c.account_id WHERE a.external_account_number = ?`,
		"payment_schedules": `SELECT count(*) FROM account_payment_schedules x JOIN accounts a ON a.id = x.account_id WHERE a.external_account_number = ?`,
		"instructions":      `SELECT count(*) FROM payment_instructions x JOIN accounts a ON a.id = x.account_id WHERE a.external_account_number = ?`,
	} {
		out[table] = s.count(q, external)
	}
	return out
}

// Through the whole service: an account with meters, registers, readings,
// PSR, payment schedules and a payment instruction is staged, dry-run
// (the vendor is asked, nothing is written) and created (every row
// exists, the instruction with the vendor's details); a reference the
// vendor does not know fails the import with a clear latest_error and
// writes nothing.
func TestAccountWithPaymentSchedules(t *testing.T) {
	t.Parallel()
	s := newPayStack(t)

	s.stageWith("EXT-PAY", withPaymentData("mandate_1NvDebit"))
	hits := s.proxy.Hits()
	if r := s.create("EXT-PAY", map[string]any{"dry_run": true}); r.Status != http.StatusBadRequest || r.JSON()["code"] != "dry_run_rolled_back" {
		t.Fatalf("dry run: %d %s", r.Status, r.Body)
	}
	if s.proxy.Hits() == hits {
		t.Error("the dry run did not verify the instruction at the vendor")
	}
	if n := s.count(`SELECT count(*) FROM accounts`) + s.count(`SELECT count(*) FROM account_payment_schedules`) +
		s.count(`SELECT count(*) FROM payment_instructions`) + s.count(`SELECT count(*) FROM meters`) + s.count(`SELECT count(*) FROM customer_psr`); n != 0 {
		t.Fatalf("the dry run left %d rows", n)
	}

	if r := s.create("EXT-PAY", nil); r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	want := map[string]int64{"meters": 1, "meter_registers": 1, "transfer_readings": 1, "customer_psr": 1, "payment_schedules": 2, "instructions": 1}
	if got := s.rows("EXT-PAY"); !mapsEqual(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	if got := s.instructions("EXT-PAY"); len(got) != 1 || got[0] != (storedInstruction{Reference: "mandate_1NvDebit", Type: "DIRECT_DEBIT", Status: "ACTIVE", MandateStatus: "active"}) {
		t.Fatalf("instruction %+v", got)
	}
	// The account has its active instruction: the post-import endpoint
	// sees it (a retry of the same one is a 201, another one refused).
	wantError(t, s.instruct(s.token, "EXT-PAY", "CARD", "pm_other"), http.StatusBadRequest, dataimport.CodeAccountHasActiveInstruction)

	// The vendor does not know the reference: the import fails, clearly.
	s.stageWith("EXT-MISSING", withPaymentData("mandate_missing"))
	s.proxy.FailNext(1, testutil.StripeMissing)
	r := s.create("EXT-MISSING", nil)
	if r.Status != http.StatusBadRequest || r.JSON()["code"] != dataimport.CodePaymentInstructionNotFound {
		t.Fatalf("refused instruction: %d %s", r.Status, r.Body)
	}
	st := s.status("EXT-MISSING")
	le, _ := st["latest_error"].(map[string]any)
	detail, _ := le["detail"].(string)
	if st["status"] != "UNKNOWN" || le["code"] != dataimport.CodePaymentInstructionNotFound || !strings.Contains(detail, "mandate_missing") {
		t.Fatalf("status %v", st)
	}
	if got := s.rows("EXT-MISSING"); got["payment_schedules"]+got["instructions"]+got["meters"] != 0 ||
		s.count(`SELECT count(*) FROM accounts WHERE external_account_number = 'EXT-MISSING'`) != 0 {
		t.Fatalf("a refused instruction left rows: %v", got)
	}
	// Once the vendor knows it, creating again succeeds.
	if r := s.create("EXT-MISSING", nil); r.Status != http.StatusCreated {
		t.Fatalf("create again: %d %s", r.Status, r.Body)
	}

	// The demo account of make run (deploy/local/demo_account_payments.json)
	// stages and creates with all of it.
	demo, err := testutil.ReadRepoFile("deploy/local/demo_account_payments.json")
	must(t, err)
	if r := s.As(s.token, http.MethodPost, stagePath, string(demo)); r.Status != http.StatusCreated {
		t.Fatalf("stage the demo account: %d %s", r.Status, r.Body)
	}
	if r := s.create("EXT-0003", nil); r.Status != http.StatusCreated {
		t.Fatalf("create the demo account: %d %s", r.Status, r.Body)
	}
	if got, want := s.rows("EXT-0003"), map[string]int64{"meters": 2, "meter_registers": 3, "transfer_readings": 3, "customer_psr": 1,
		"payment_schedules": 2, "instructions": 1}; !mapsEqual(got, want) {
		t.Fatalf("demo account rows %v, want %v", got, want)
	}

	// A vendor that is not configured is refused when staging.
	r = s.As(s.token, http.MethodPost, stagePath, s.edited("EXT-PAYPAL", func(m map[string]any) {
		withPaymentData("x")(m)
		m["payment_instructions"].([]any)[0].(map[string]any)["vendor"] = "PAYPAL"
	}))
	wantFieldError(t, r, "account_failed_validation", "payment_instructions.0.vendor", "invalid_choice")
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// The vendor is asked with no database transaction open: while it takes
// its time, no session of the service's database is inside a transaction
// older than a fraction of that time. A vendor that refuses our
// credentials fails the import with payment_vendor_unavailable; one that
// fails transiently is retried with the job, and the account is created
// once.
func TestAccountInstructionVendorOutcomes(t *testing.T) {
	t.Parallel()
	s := newPayStack(t)

	s.stageWith("EXT-SLOW", withPaymentData("mandate_slow"))
	// Held for 1.5 s, then forwarded. Just before the vendor answers, any
	// transaction that began before the request reached the vendor was
	// open across the whole call: there must be none. (Looking for any
	// transaction older than a fraction of the delay failed when a loaded
	// machine stalled a short transaction for about a second.)
	spanning := make(chan []string, 1)
	s.proxy.FailNext(1, testutil.Fault{Delay: 1500 * time.Millisecond, AfterDelay: func(arrived time.Time) {
		var open []string
		err := s.DB.Gorm().Raw(`SELECT round(extract(epoch FROM now() - xact_start)::numeric, 2) || ' s: ' || application_name || ' ' || state || ' ' ||
			       coalesce(wait_event_type || ':' || wait_event, '') || ': ' || left(query, 160)
			  FROM pg_stat_activity
			 WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start < ?`, arrived).Scan(&open).Error
		if err != nil {
			open = append(open, "pg_stat_activity: "+err.Error())
		}
		spanning <- open
	}})
	if r := s.create("EXT-SLOW", nil); r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	select {
	case open := <-spanning:
		if len(open) > 0 {
			t.Errorf("transactions open across the vendor call: %v", open)
		}
	default:
		t.Fatal("the vendor was never asked")
	}

	// Credentials refused: persistent, the attempt fails with the endpoint's code.
	s.stageWith("EXT-KEY", withPaymentData("mandate_key"))
	s.proxy.FailNext(1, testutil.StripeUnauthorized)
	if r := s.create("EXT-KEY", nil); r.Status != http.StatusBadRequest || r.JSON()["code"] != dataimport.CodePaymentVendorUnavailable {
		t.Fatalf("credentials refused: %d %s", r.Status, r.Body)
	}
	if le, _ := s.status("EXT-KEY")["latest_error"].(map[string]any); le["code"] != dataimport.CodePaymentVendorUnavailable || le["domain"] != "vendor" {
		t.Fatalf("latest_error %v", le)
	}

	// Unavailable for all of one job's in-request tries: the job is
	// retried and the account created once.
	s.stageWith("EXT-FLAKY", withPaymentData("mandate_flaky"))
	s.proxy.FailNext(3, testutil.StripeUnavailable)
	if r := s.create("EXT-FLAKY", nil); r.Status != http.StatusCreated {
		t.Fatalf("transient: %d %s", r.Status, r.Body)
	}
	if got := s.rows("EXT-FLAKY"); got["instructions"] != 1 || got["payment_schedules"] != 2 {
		t.Fatalf("rows %v", got)
	}
}
