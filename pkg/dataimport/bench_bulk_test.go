package dataimport_test

import (
	"os"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/market/gb"
)

// testdata/account_bulk.json is one line of a bulk job as cmd/loadgen writes
// it (realisticAccount: 2 customers, 1 supply address, 2 meter points with
// agreements and meters, 2 notes, 5 opening transactions, 2 payment
// schedules; about 4 KB), validated as the server does for a GB supplier.
// Its dates were relative to the day it was generated, hence the fixed day.
var bulkRules = dataimport.AccountRules{PhoneRegion: "GB", Today: dataimport.Date{Year: 2026, Month: 12, Day: 15}, Market: gb.Market{}}

func bulkAccountJSON(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile("testdata/account_bulk.json")
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestBulkAccountIsValid(t *testing.T) {
	body := bulkAccountJSON(t)
	a, err := dataimport.DecodeAccount(body, bulkRules)
	if err != nil {
		t.Fatalf("invalid: %v", err)
	}
	if len(body) < 3500 || len(body) > 4700 || len(a.Customers) != 2 || a.MeterPointCount() != 2 ||
		len(a.Notes) != 2 || len(a.CurrentStatementTransactions) != 5 {
		t.Fatalf("not the bulk benchmark's shape: %d bytes", len(body))
	}
}

// BenchmarkDecodeValidateBulkAccount is the per-line cost of validating a
// bulk job: the goal is at most 50 µs per 4 KB account.
func BenchmarkDecodeValidateBulkAccount(b *testing.B) {
	body := bulkAccountJSON(b)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := dataimport.DecodeAccount(body, bulkRules); err != nil {
			b.Fatal(err)
		}
	}
}
