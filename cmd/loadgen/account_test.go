package main

import (
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// The load-test account must be what partners send: valid, about 3 KB.
func TestRealisticAccountIsValid(t *testing.T) {
	body := mustJSON(realisticAccount("BENCH_ENERGY", "LG-0000001", 1))
	acc, err := dataimport.DecodeAccount(body, dataimport.AccountRules{PhoneRegion: "GB", Today: dataimport.DateOf(time.Now().UTC())})
	if err != nil {
		t.Fatalf("invalid: %v", err)
	}
	if len(body) < 2500 || len(body) > 4000 {
		t.Fatalf("payload is %d bytes, want about 3 KB", len(body))
	}
	if len(acc.Customers) != 2 || acc.MeterPointCount() != 2 || len(acc.Notes) != 2 || len(acc.CurrentStatementTransactions) != 5 {
		t.Fatalf("shape: %d customers, %d meter points, %d notes, %d transactions",
			len(acc.Customers), acc.MeterPointCount(), len(acc.Notes), len(acc.CurrentStatementTransactions))
	}
}
