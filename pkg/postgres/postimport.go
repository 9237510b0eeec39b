package postgres

import (
	"context"
	"fmt"
	"maps"

	"github.com/shopspring/decimal"
	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Post-import requests, as the "request" of their timeline events.
const (
	RequestNotes              = "notes"
	RequestTransactions       = "transactions"
	RequestStatements         = "statements"
	RequestPaymentInstruction = "payment_instruction"
)

// lockedAccount is an account whose row lock the transaction holds, with
// what the lock guards.
type lockedAccount struct {
	ID        int64
	ProcessID int64
	Balance   decimal.Decimal
}

// lockAccount takes the account's row lock for the rest of the transaction:
// post-import writes to one account are serialised by it.
func lockAccount(tx *gorm.DB, accountID int64) (lockedAccount, error) {
	var rows []lockedAccount
	err := tx.Raw(`SELECT id, import_process_id AS process_id, balance FROM accounts WHERE id = ? FOR UPDATE`, accountID).Scan(&rows).Error
	if err != nil {
		return lockedAccount{}, fmt.Errorf("lock account: %w", err)
	}
	if len(rows) == 0 {
		return lockedAccount{}, ErrAccountNotFound()
	}
	return rows[0], nil
}

// postImport runs the writes of one post-import request in one transaction
// that holds the account's row lock, and records the accepted request
// (EVENT_POST_IMPORT_COMPLETED, with the data write returns) in that same
// transaction: a request that rolls back leaves no event. A refusal commits
// nothing, so it is recorded apart (RecordPostImportEvent).
func (db *DB) postImport(ctx context.Context, accountID int64, request string,
	write func(tx *gorm.DB, acc lockedAccount) (map[string]any, error)) error {
	return db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		acc, err := lockAccount(tx, accountID)
		if err != nil {
			return err
		}
		data, err := write(tx, acc)
		if err != nil {
			return err
		}
		return recordEvent(tx, acc.ProcessID, dataimport.EventPostImportOK, postImportData(request, data))
	})
}

// RecordPostImportEvent records a post-import request that wrote nothing
// else (a refusal, EVENT_POST_IMPORT_ERRORED, or a retry answered from what
// is already stored) in a transaction of its own: there is no change for it
// to share one with.
func (db *DB) RecordPostImportEvent(ctx context.Context, processID int64, event, request string, data map[string]any) error {
	return recordEvent(db.gorm.WithContext(ctx), processID, event, postImportData(request, data))
}

func postImportData(request string, data map[string]any) map[string]any {
	out := make(map[string]any, len(data)+1)
	maps.Copy(out, data)
	out["request"] = request
	return out
}
