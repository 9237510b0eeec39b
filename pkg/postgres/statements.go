package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/shopspring/decimal"
	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

type historicalStatementRow struct {
	ID                 int64 `gorm:"primaryKey"`
	AccountID          int64
	StatementID        string
	BillPeriodFromDate time.Time
	BillPeriodToDate   time.Time
	IssuedDate         *time.Time
	Number             *string
	GrossAmount        *decimal.Decimal
	StatementPath      *string
}

func (historicalStatementRow) TableName() string { return "historical_statements" }

// CreateHistoricalStatements stores validated statements, all or nothing.
// If the account already has any of their statement_ids, nothing is stored
// and the error (historical_statement_already_exists) names every one. The
// account row lock makes the check and the insert one step for concurrent
// requests; the unique constraint backs it. The account's timeline records
// the request.
func (db *DB) CreateHistoricalStatements(ctx context.Context, accountID int64, sts []dataimport.HistoricalStatement) error {
	return db.postImport(ctx, accountID, RequestStatements, func(tx *gorm.DB, _ lockedAccount) (map[string]any, error) {
		done := map[string]any{"count": len(sts)}
		if len(sts) == 0 {
			return done, nil
		}
		ids := make([]string, len(sts))
		for i, s := range sts {
			ids[i] = s.StatementID
		}
		var found []string
		if err := tx.Raw(`SELECT statement_id FROM historical_statements
			WHERE account_id = ? AND statement_id IN (SELECT jsonb_array_elements_text(?::jsonb))`, accountID, jsonText(ids)).
			Scan(&found).Error; err != nil {
			return nil, fmt.Errorf("load statement ids: %w", err)
		}
		if len(found) > 0 {
			have := make(map[string]bool, len(found))
			for _, id := range found {
				have[id] = true
			}
			dups := map[int]string{}
			for i, id := range ids {
				if have[id] {
					dups[i] = id
				}
			}
			return nil, dataimport.StatementsAlreadyExist(dups)
		}
		rows := make([]historicalStatementRow, len(sts))
		for i, s := range sts {
			rows[i] = historicalStatementRow{AccountID: accountID, StatementID: s.StatementID,
				BillPeriodFromDate: s.BillPeriodFromDate.Time(), BillPeriodToDate: s.BillPeriodToDate.Time(),
				IssuedDate: dateTime(s.IssuedDate), Number: s.Number, StatementPath: s.StatementPath}
			if s.GrossAmount != nil {
				rows[i].GrossAmount = &s.GrossAmount.Decimal
			}
		}
		if err := tx.Create(&rows).Error; err != nil {
			return nil, fmt.Errorf("insert historical statements: %w", err)
		}
		return done, nil
	})
}

// StatementChange is what OpenStatement did.
type StatementChange struct {
	PlatformAccountNumber string
	Closed                *StatementPeriod // nil when the account had no open statement
	Opened                StatementPeriod
}

// StatementPeriod is a statement's period, both days included.
type StatementPeriod struct {
	From dataimport.Date `json:"from"`
	To   dataimport.Date `json:"to"`
}

// OpenStatement is the billing-side hook of `importctl statement open`: in
// one transaction (holding the account's row lock, like transaction imports)
// it closes the account's open statement and opens [from, to]. The new
// period must start after every day of the statements before it, so periods
// never overlap and never go back in time; a gap is allowed.
func (db *DB) OpenStatement(ctx context.Context, supplierCode, external string, from, to dataimport.Date) (StatementChange, error) {
	if to.Before(from) {
		return StatementChange{}, fmt.Errorf("--to %s is before --from %s", to, from)
	}
	sup, err := db.SupplierByCode(ctx, supplierCode)
	if err != nil {
		return StatementChange{}, err
	}
	acc, err := db.ImportedAccount(ctx, sup.ID, external)
	if err != nil {
		return StatementChange{}, fmt.Errorf("account %s/%s: %w", supplierCode, external, err)
	}
	out := StatementChange{PlatformAccountNumber: acc.PlatformAccountNumber, Opened: StatementPeriod{from, to}}
	err = db.audited(ctx, AuditStatementOpen, func(tx *gorm.DB) (string, any, any, error) {
		target := "account:" + supplierCode + "/" + external
		if _, err := lockAccount(tx, acc.ID); err != nil {
			return "", nil, nil, err
		}
		var latest []*time.Time
		if err := tx.Raw(`SELECT max(period_to) FROM statements WHERE account_id = ?`, acc.ID).Scan(&latest).Error; err != nil {
			return "", nil, nil, fmt.Errorf("load statements: %w", err)
		}
		if len(latest) == 1 && latest[0] != nil {
			if last := dataimport.DateOf(latest[0].UTC()); !from.After(last) {
				return "", nil, nil, fmt.Errorf("the new period must start after %s, the last day of the account's statements so far (got --from %s)", last, from)
			}
		}
		var closed []struct {
			PeriodFrom, PeriodTo time.Time
		}
		if err := tx.Raw(`UPDATE statements SET status = 'CLOSED' WHERE account_id = ? AND status = 'OPEN' RETURNING period_from, period_to`, acc.ID).
			Scan(&closed).Error; err != nil {
			return "", nil, nil, fmt.Errorf("close statement: %w", err)
		}
		if len(closed) == 1 {
			out.Closed = &StatementPeriod{dataimport.DateOf(closed[0].PeriodFrom.UTC()), dataimport.DateOf(closed[0].PeriodTo.UTC())}
		}
		if err := tx.Exec(`INSERT INTO statements (account_id, period_from, period_to) VALUES (?, ?, ?)`, acc.ID, from.Time(), to.Time()).Error; err != nil {
			return "", nil, nil, fmt.Errorf("open statement: %w", err)
		}
		var before any
		if out.Closed != nil {
			before = map[string]any{"open_statement": out.Closed}
		}
		return target, before, map[string]any{"open_statement": out.Opened}, nil
	})
	if err != nil {
		return StatementChange{}, err
	}
	return out, nil
}
