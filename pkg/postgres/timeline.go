package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Timeline is everything known about one account, for the console: the
// process, every staged version, every attempt, every event and the data
// added after import.
type Timeline struct {
	Supplier string
	Process  dataimport.ImportProcess
	Versions []StagedVersion
	// VersionsDropped: the account's staged versions were dropped when the
	// bulk job that created it was compacted (job_compact.go).
	VersionsDropped bool
	Attempts        []AttemptRow
	Events          []Event
	Post            PostImportData
}

// StagedVersion is one staged payload.
type StagedVersion struct {
	Version   int
	CreatedAt time.Time
	Payload   json.RawMessage
}

// AttemptRow is one finished creation attempt.
type AttemptRow struct {
	Attempt               int
	Outcome               string
	Error                 json.RawMessage
	PlatformAccountNumber *string
	FinishedAt            time.Time
}

// PostImportData is what was added to the account after its creation (the
// newest 50 of each).
type PostImportData struct {
	Balance string
	Notes   []struct {
		Body      string
		CreatedAt time.Time
	}
	Transactions []struct {
		TransactionID, Type, Amount string
		TransactionDate             time.Time
	}
	Statements []struct {
		PeriodFrom, PeriodTo time.Time
		Status               string
	}
	HistoricalStatements []struct {
		StatementID                          string
		BillPeriodFromDate, BillPeriodToDate time.Time
	}
	PaymentInstructions []struct{ Vendor, Reference, Type, Status string }
}

// FindTimeline finds the supplier's account by external or platform account
// number and loads its timeline; ErrProcessNotFound if there is none.
func (db *DB) FindTimeline(ctx context.Context, supplierCode, number string) (Timeline, error) {
	var rows []processRow
	g := db.gorm.WithContext(ctx)
	if err := g.Raw(`SELECT p.* FROM import_processes p JOIN import_suppliers s ON s.id = p.supplier_id AND s.code = ?
		WHERE p.external_account_number = ?
		   OR p.id = (SELECT a.import_process_id FROM accounts a WHERE a.platform_account_number = ? AND a.supplier_id = s.id)
		ORDER BY p.external_account_number = ? DESC LIMIT 1`, supplierCode, number, number, number).Scan(&rows).Error; err != nil {
		return Timeline{}, fmt.Errorf("find account: %w", err)
	}
	if len(rows) == 0 {
		return Timeline{}, ErrProcessNotFound
	}
	t := Timeline{Supplier: supplierCode, Process: rows[0].domain()}
	id := t.Process.ID
	if err := g.Raw(`SELECT version, created_at, payload FROM import_process_versions WHERE process_id = ? ORDER BY version`, id).
		Scan(&t.Versions).Error; err != nil {
		return Timeline{}, fmt.Errorf("staged versions: %w", err)
	}
	if len(t.Versions) == 0 {
		if err := g.Raw(`SELECT staged_figures IS NOT NULL FROM import_processes WHERE id = ?`, id).Scan(&t.VersionsDropped).Error; err != nil {
			return Timeline{}, fmt.Errorf("staged versions: %w", err)
		}
	}
	if err := g.Raw(`SELECT attempt, outcome, error, platform_account_number, finished_at FROM import_attempts WHERE process_id = ? ORDER BY attempt`, id).
		Scan(&t.Attempts).Error; err != nil {
		return Timeline{}, fmt.Errorf("attempts: %w", err)
	}
	events, err := db.Events(ctx, id)
	if err != nil {
		return Timeline{}, err
	}
	t.Events = events
	if t.Process.PlatformAccountNumber == "" {
		return t, nil
	}
	var acc []struct {
		ID      int64
		Balance string
	}
	if err := g.Raw(`SELECT id, balance::text AS balance FROM accounts WHERE import_process_id = ?`, id).Scan(&acc).Error; err != nil || len(acc) == 0 {
		return t, err
	}
	a, p := acc[0].ID, &t.Post
	p.Balance = acc[0].Balance
	for _, q := range []struct {
		sql  string
		dest any
	}{
		{`SELECT body, created_at FROM account_notes WHERE account_id = ? ORDER BY id DESC LIMIT 50`, &p.Notes},
		{`SELECT transaction_id, type, amount::text AS amount, transaction_date FROM account_transactions WHERE account_id = ? ORDER BY id DESC LIMIT 50`, &p.Transactions},
		{`SELECT period_from, period_to, status FROM statements WHERE account_id = ? ORDER BY period_from DESC LIMIT 50`, &p.Statements},
		{`SELECT statement_id, bill_period_from_date, bill_period_to_date FROM historical_statements WHERE account_id = ? ORDER BY id DESC LIMIT 50`, &p.HistoricalStatements},
		{`SELECT vendor, reference, type, status FROM payment_instructions WHERE account_id = ? ORDER BY id DESC LIMIT 50`, &p.PaymentInstructions},
	} {
		if err := g.Raw(q.sql, a).Scan(q.dest).Error; err != nil {
			return Timeline{}, fmt.Errorf("post-import data: %w", err)
		}
	}
	return t, nil
}
