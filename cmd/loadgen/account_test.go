package main

import (
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/market/gb"
)

// The load-test account must be what partners send: valid (market GB
// too), about 4 KB, with meter data.
func TestRealisticAccountIsValid(t *testing.T) {
	body := mustJSON(realisticAccount("BENCH_ENERGY", "LG-0000001", 1))
	acc, err := dataimport.DecodeAccount(body, dataimport.AccountRules{PhoneRegion: "GB", Today: dataimport.DateOf(time.Now().UTC()), Market: gb.Market{}})
	if err != nil {
		t.Fatalf("invalid: %v", err)
	}
	if len(body) < 3000 || len(body) > 5000 {
		t.Fatalf("payload is %d bytes, want about 4 KB", len(body))
	}
	mps := acc.SupplyAddresses[0].MeterPoints
	if len(mps[0].Meters) != 1 || len(mps[0].Meters[0].Registers) != 2 || len(mps[0].Meters[0].TransferReadings) != 2 ||
		len(mps[1].Meters[0].TransferReadings) != 1 || len(acc.Customers[0].PSR) != 1 {
		t.Fatalf("meter data shape: %+v", mps)
	}
	if len(acc.PaymentSchedules) != 2 || len(acc.PaymentInstructions) != 0 {
		t.Fatalf("payment shape: %+v %+v", acc.PaymentSchedules, acc.PaymentInstructions)
	}
	// With -payment-vendor, a payment instruction at that vendor.
	withPI := mustJSON(withInstruction(realisticAccount("BENCH_ENERGY", "LG-0000001", 1), "STRIPE", 1))
	pi, err := dataimport.DecodeAccount(withPI, dataimport.AccountRules{PhoneRegion: "GB", Today: dataimport.DateOf(time.Now().UTC()),
		Market: gb.Market{}, PaymentVendors: []string{"STRIPE"}})
	if err != nil {
		t.Fatalf("invalid with an instruction: %v", err)
	}
	if len(pi.PaymentInstructions) != 1 || pi.PaymentInstructions[0].Type != dataimport.PaymentDirectDebit || len(withPI) > 5000 {
		t.Fatalf("instruction shape: %+v (%d bytes)", pi.PaymentInstructions, len(withPI))
	}
	if len(acc.Customers) != 2 || acc.MeterPointCount() != 2 || len(acc.Notes) != 2 || len(acc.CurrentStatementTransactions) != 5 {
		t.Fatalf("shape: %d customers, %d meter points, %d notes, %d transactions",
			len(acc.Customers), acc.MeterPointCount(), len(acc.Notes), len(acc.CurrentStatementTransactions))
	}
}
