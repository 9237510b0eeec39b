package postgres_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// withPayments gives the sample account meter data and PSR (withMeterData),
// two payment schedules and a payment instruction.
func withPayments(m map[string]any) {
	withMeterData(1)(m)
	m["payment_schedules"] = []any{
		map[string]any{"means": "DIRECT_DEBIT", "start_date": "2025-07-01", "frequency": "MONTHLY", "amount": "85.5"},
		map[string]any{"means": "CASH_CHEQUE", "start_date": "2024-01-15", "frequency": "QUARTERLY", "amount": 120},
	}
	m["payment_instructions"] = []any{map[string]any{"type": "DIRECT_DEBIT", "reference": "mandate_1NvDebit", "vendor": "STRIPE"}}
}

// verified is what the worker passes after asking the vendor.
func verified(in postgres.CreationInput) postgres.CreationInput {
	for _, p := range in.Account.PaymentInstructions {
		pi := p.Instruction()
		pi.Details = dataimport.PaymentDetails{MandateStatus: "active"}
		in.Instructions = append(in.Instructions, pi)
	}
	return in
}

// An account with meters, registers, readings, PSR, payment schedules and
// a payment instruction round-trips: every row exists after creation, in
// the one creation transaction; a dry run leaves none.
func TestCreateAccountStoresPaymentSchedules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.supplier("PAYSCHED", false)

	dry := verified(e.prepare(s, "EXT-DRY", true, withPayments))
	if _, err := e.db.CreateAccount(e.ctx, dry); !errors.Is(err, postgres.ErrDryRun) {
		t.Fatalf("dry run: %v", err)
	}
	e.wantNothingWritten()

	res := e.create(verified(e.prepare(s, "EXT-PAY", false, withPayments)))
	want := sampleCounts(1)
	want["meters"], want["meter_registers"], want["transfer_readings"], want["customer_psr"] = 2, 3, 3, 3
	want["account_payment_schedules"], want["payment_instructions"] = 2, 1
	e.wantCounts(want)

	var got string
	e.scalar(&got, `SELECT string_agg(position || ':' || means || ':' || start_date || ':' || frequency || ':' || amount, ' ' ORDER BY position)
		  FROM account_payment_schedules WHERE account_id = ?`, res.AccountID)
	if want := "0:DIRECT_DEBIT:2025-07-01:MONTHLY:85.50 1:CASH_CHEQUE:2024-01-15:QUARTERLY:120.00"; got != want {
		t.Errorf("schedules:\n got  %s\n want %s", got, want)
	}
	active, found, err := e.db.ActivePaymentInstruction(e.ctx, res.AccountID)
	e.must(err)
	if !found || active.Vendor != "STRIPE" || active.Reference != "mandate_1NvDebit" || active.Type != dataimport.PaymentDirectDebit ||
		active.Details.MandateStatus != "active" {
		t.Errorf("active instruction %+v (found %v)", active, found)
	}
	// The account's details keep no copy of what has rows of its own.
	var details string
	e.scalar(&details, `SELECT details::text FROM accounts WHERE id = ?`, res.AccountID)
	if len(details) == 0 || strings.Contains(details, "payment_schedules") || strings.Contains(details, "payment_instructions") {
		t.Errorf("account details %s", details)
	}
}

// The store refuses to write an instruction the caller did not verify at
// the vendor: a programming error, before any transaction.
func TestCreateAccountRefusesUnverifiedInstruction(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.supplier("PAYUNVERIFIED", false)
	in := e.prepare(s, "EXT-UNVERIFIED", false, withPayments)
	if _, err := e.db.CreateAccount(e.ctx, in); err == nil || dataimport.ErrorCode(err) != "" {
		t.Fatalf("unverified instruction: %v", err)
	}
	other := verified(in)
	other.Instructions[0].Reference = "mandate_other"
	if _, err := e.db.CreateAccount(e.ctx, other); err == nil {
		t.Fatal("an instruction other than the account's was accepted")
	}
	e.wantCounts(map[string]int{})
}
