package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// accountTables are the rows an account lands as on the platform: the
// account and everything it owns. Every other table of the schema is the
// import's bookkeeping (processes, staged versions, events, attempts, job
// lines, idempotency keys, outboxes) or reference data that does not grow
// with the accounts. TestAccountTablesAreWhatAnAccountOwns holds this list to
// the schema's foreign keys, so a new account table cannot be counted as
// bookkeeping by omission.
var accountTables = []string{
	"accounts",
	"account_customers", "customer_psr",
	"supply_addresses", "meter_points", "agreements",
	"meters", "meter_registers", "transfer_readings",
	"account_payment_schedules", "payment_instructions",
	"statements", "account_transactions", "historical_statements",
	"account_notes",
}

// ownedBookkeeping are tables an account owns (deleted with it) that are
// nevertheless the import's work, not the account: the welcome e-mail
// outbox keeps delivery attempts and errors; landed_digests keeps what the
// status reads last computed.
var ownedBookkeeping = []string{"welcome_emails", "landed_digests"}

func isAccountTable(name string) bool { return slices.Contains(accountTables, name) }

// tableSizes is every table of the schema with its total size (heap, TOAST
// and indexes). The pgbench ceiling's own scratch tables are left out.
func tableSizes(ctx context.Context, dbURL string) (map[string]int64, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, fmt.Errorf("table sizes: %w", err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT c.relname, pg_total_relation_size(c.oid)
		  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		 WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND c.relname NOT LIKE 'pgbench\_%'`)
	if err != nil {
		return nil, fmt.Errorf("table sizes: %w", err)
	}
	sizes := map[string]int64{}
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return nil, fmt.Errorf("table sizes: %w", err)
		}
		sizes[name] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("table sizes: %w", err)
	}
	return sizes, nil
}

// tableGrowth is one table's growth over the run.
type tableGrowth struct {
	Table   string `json:"table"`
	Account bool   `json:"account"` // an account table; otherwise bookkeeping
	Bytes   int64  `json:"bytes"`
}

// bookkeepingResult is the disk the accounts take beside the disk the
// import's bookkeeping takes for them.
type bookkeepingResult struct {
	Accounts         int           `json:"accounts"`
	AccountBytes     int64         `json:"account_bytes"`
	BookkeepingBytes int64         `json:"bookkeeping_bytes"`
	Tables           []tableGrowth `json:"tables"` // largest growth first
}

func (b bookkeepingResult) accountKB() float64 {
	return float64(b.AccountBytes) / 1024 / float64(max(b.Accounts, 1))
}

func (b bookkeepingResult) bookkeepingKB() float64 {
	return float64(b.BookkeepingBytes) / 1024 / float64(max(b.Accounts, 1))
}

// ratio is bookkeeping bytes per account byte (0 when no account landed).
func (b bookkeepingResult) ratio() float64 {
	if b.AccountBytes <= 0 {
		return 0
	}
	return float64(b.BookkeepingBytes) / float64(b.AccountBytes)
}

// bookkeeping splits each table's growth from before to after between the
// account tables and the rest. Growth, not size: the empty schema's pages
// are not the accounts'.
func bookkeeping(before, after map[string]int64, accounts int) bookkeepingResult {
	res := bookkeepingResult{Accounts: accounts}
	for name, n := range after {
		g := tableGrowth{Table: name, Account: isAccountTable(name), Bytes: n - before[name]}
		if g.Account {
			res.AccountBytes += g.Bytes
		} else {
			res.BookkeepingBytes += g.Bytes
		}
		res.Tables = append(res.Tables, g)
	}
	sort.Slice(res.Tables, func(i, j int) bool {
		if res.Tables[i].Bytes != res.Tables[j].Bytes {
			return res.Tables[i].Bytes > res.Tables[j].Bytes
		}
		return res.Tables[i].Table < res.Tables[j].Table
	})
	return res
}

// markdown is the per-table breakdown: the top tables, the rest summed.
func (b bookkeepingResult) markdown(top int) string {
	var s strings.Builder
	s.WriteString("| table | kind | KB per account | MB in all |\n|---|---|---|---|\n")
	var rest int64
	restN := 0
	for i, t := range b.Tables {
		if i >= top {
			rest += t.Bytes
			restN++
			continue
		}
		kind := "bookkeeping"
		if t.Account {
			kind = "account"
		}
		fmt.Fprintf(&s, "| %s | %s | %.2f | %.1f |\n", t.Table, kind, float64(t.Bytes)/1024/float64(max(b.Accounts, 1)), float64(t.Bytes)/(1<<20))
	}
	if restN > 0 {
		fmt.Fprintf(&s, "| %d other tables | | %.2f | %.1f |\n", restN, float64(rest)/1024/float64(max(b.Accounts, 1)), float64(rest)/(1<<20))
	}
	return s.String()
}
