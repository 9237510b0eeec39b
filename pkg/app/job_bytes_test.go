package app_test

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Bytes a job leaves behind, table by table (CONTRACT §11's bookkeeping
// against the account rows it landed): every table compacted first
// (VACUUM FULL, so dead rows are not counted) and its size on an empty
// database subtracted (a table's first pages are there before any job).

// accountTables hold the accounts themselves; every other table that grows
// with a job is bookkeeping.
var accountTables = map[string]bool{
	"accounts": true, "account_customers": true, "supply_addresses": true, "meter_points": true, "agreements": true,
	"meters": true, "meter_registers": true, "transfer_readings": true, "customer_psr": true, "statements": true,
	"account_transactions": true, "account_notes": true, "account_payment_schedules": true, "payment_instructions": true,
	"historical_statements": true,
}

// tableBytes answers every table's total size (heap, TOAST, indexes) after
// VACUUM FULL.
func (p *pipeline) tableBytes() map[string]int64 {
	p.TB.Helper()
	var names []string
	if err := p.DB.Gorm().Raw(`SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname <> 'goose_db_version'`).Scan(&names).Error; err != nil {
		p.TB.Fatal(err)
	}
	// Rows deleted just before are kept by VACUUM FULL while a transaction
	// that began before the delete runs: this database's (the event relay's,
	// every 100 ms), and some of other databases' (creating or dropping a
	// database, other tests on the same server). Wait until every snapshot
	// is newer than now; past a minute, measure anyway (the caller may
	// measure again).
	var mark int64
	if err := p.DB.Gorm().Raw(`SELECT pg_current_xact_id()::text::bigint`).Scan(&mark).Error; err != nil {
		p.TB.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		older := p.count(`SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid()
			AND (backend_xmin::text::bigint <= ? OR backend_xid::text::bigint <= ?)`, mark, mark)
		if older == 0 {
			break
		}
		if time.Now().After(deadline) {
			p.TB.Logf("%d transactions older than the measure still run: dead rows may be counted", older)
			break
		}
	}
	out := map[string]int64{}
	for _, name := range names {
		if err := p.DB.Gorm().Exec(fmt.Sprintf(`VACUUM FULL %q`, name)).Error; err != nil {
			p.TB.Fatal(err)
		}
		out[name] = p.count(`SELECT pg_total_relation_size(?::regclass)`, name)
	}
	return out
}

// jobBytes is one measure: bytes grown per table since base, split.
type jobBytes struct {
	Tables               map[string]int64
	Account, Bookkeeping int64
}

func grownSince(base, now map[string]int64) jobBytes {
	b := jobBytes{Tables: map[string]int64{}}
	for name, n := range now {
		d := n - base[name]
		if d <= 0 {
			continue
		}
		b.Tables[name] = d
		if accountTables[name] {
			b.Account += d
		} else {
			b.Bookkeeping += d
		}
	}
	return b
}

// PerKB is the bookkeeping bytes per KB of account rows.
func (b jobBytes) PerKB() float64 { return float64(b.Bookkeeping) / float64(b.Account) }

// String lists the tables, largest first, with bytes per account.
func (b jobBytes) String(accounts int64) string {
	var names []string
	for n := range b.Tables {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return b.Tables[names[i]] > b.Tables[names[j]] })
	var s strings.Builder
	fmt.Fprintf(&s, "| table | kind | bytes | bytes per account |\n|---|---|---:|---:|\n")
	for _, n := range names {
		kind := "bookkeeping"
		if accountTables[n] {
			kind = "account"
		}
		fmt.Fprintf(&s, "| %s | %s | %d | %.0f |\n", n, kind, b.Tables[n], float64(b.Tables[n])/float64(accounts))
	}
	fmt.Fprintf(&s, "| **account rows** | | %d | %.0f |\n| **bookkeeping** | | %d | %.0f |\n", b.Account, float64(b.Account)/float64(accounts),
		b.Bookkeeping, float64(b.Bookkeeping)/float64(accounts))
	fmt.Fprintf(&s, "\nbookkeeping per KB of account rows: %.2f KB\n", b.PerKB())
	return s.String()
}
