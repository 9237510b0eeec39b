package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shopspring/decimal"
	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// TransactionsInput is one transactions request, validated.
type TransactionsInput struct {
	AccountID    int64
	Transactions []dataimport.Transaction
	// CheckPreviouslyAdded answers a known transaction_id with
	// TRANSACTION_ALREADY_EXISTS; without it the unique constraint refuses
	// a repeat and the whole request fails.
	CheckPreviouslyAdded bool
	// ForceIntoOpenStatement moves dates outside the open statement into it;
	// without it such a transaction fails the whole request.
	ForceIntoOpenStatement bool
	Now                    time.Time
}

// CreateTransactions adds a request's transactions to the account's open
// statement, all or nothing, in one database transaction that holds the
// account's row lock (concurrent requests for one account run one after the
// other). The balance moves by the sum of the added transactions' effects;
// if any date was moved, one pinned note says so. A transaction that cannot
// be stored is a TRANSACTION_IMPORT_ERROR naming it, and nothing is kept.
// The account's timeline records the request.
func (db *DB) CreateTransactions(ctx context.Context, in TransactionsInput) ([]dataimport.TransactionResult, error) {
	results := make([]dataimport.TransactionResult, len(in.Transactions))
	err := db.postImport(ctx, in.AccountID, RequestTransactions, func(tx *gorm.DB, acc lockedAccount) (map[string]any, error) {
		stmt, err := openStatement(tx, in.AccountID)
		if err != nil {
			return nil, err
		}
		existing := map[string]bool{}
		if in.CheckPreviouslyAdded {
			if existing, err = knownTransactionIDs(tx, in.AccountID, in.Transactions); err != nil {
				return nil, err
			}
		}
		var add []dataimport.Transaction
		var addIndex []int // request index of add[k]
		for i, t := range in.Transactions {
			if existing[t.TransactionID] {
				results[i] = dataimport.TransactionResult{Status: dataimport.TransactionAlreadyExists,
					TransactionData: dataimport.StoredTransaction{Transaction: t}}
				continue
			}
			add = append(add, t)
			addIndex = append(addIndex, i)
		}
		// The balance column is numeric(16,2): refuse, naming the
		// transaction, rather than let the update fail.
		if o, over := dataimport.RunningBalanceOverflow(acc.Balance, add); over {
			return nil, dataimport.TransactionImportError(fmt.Sprintf("Transaction %q cannot be added: %s Nothing was added.",
				add[o.Index].TransactionID, o.Detail()), add[o.Index])
		}
		var stored []dataimport.StoredTransaction
		var moved int
		// A savepoint, so that after a unique violation the transaction can
		// still find out which transaction_id was the repeat.
		err = tx.Transaction(func(sp *gorm.DB) error {
			var err error
			stored, moved, err = insertTransactions(sp, in.AccountID, stmt.ID, stmt.From, stmt.To, add, in.ForceIntoOpenStatement)
			return err
		})
		if err != nil {
			return nil, transactionImportError(tx, in.AccountID, add, err)
		}
		sum := decimal.Zero
		for k, s := range stored {
			results[addIndex[k]] = dataimport.TransactionResult{Status: dataimport.TransactionAddedToAccount, TransactionData: s}
			sum = sum.Add(add[k].BalanceEffect())
		}
		if moved > 0 {
			if err := insertNotes(tx, in.AccountID, []dataimport.Note{dataimport.MovedNote(moved, stmt.From, stmt.To)}, in.Now); err != nil {
				return nil, err
			}
		}
		if len(add) > 0 {
			if err := tx.Exec(`UPDATE accounts SET balance = balance + ? WHERE id = ?`, sum, in.AccountID).Error; err != nil {
				return nil, fmt.Errorf("update balance: %w", err)
			}
		}
		return map[string]any{"count": len(add), "already_existing": len(in.Transactions) - len(add),
			"moved_into_open_statement": moved, "balance_change": sum.StringFixed(2)}, nil
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

// transactionImportError turns a failed insert into the 400 naming the
// first failing transaction, or returns err unchanged when it is not the
// partner's doing.
func transactionImportError(tx *gorm.DB, accountID int64, add []dataimport.Transaction, err error) error {
	var outside *TransactionOutsidePeriodError
	if errors.As(err, &outside) {
		t := add[outside.Index]
		return dataimport.TransactionImportError(fmt.Sprintf(
			"Transaction %q is dated %s, outside the open statement period %s to %s. Send it with a date in that period, "+
				"or with force_add_to_current_statement=true to have it moved. Nothing was added.",
			t.TransactionID, t.TransactionDate, outside.From, outside.To), t)
	}
	if !IsUniqueViolation(err) {
		return err
	}
	known, qerr := knownTransactionIDs(tx, accountID, add)
	if qerr != nil {
		return errors.Join(err, qerr)
	}
	if i := slices.IndexFunc(add, func(t dataimport.Transaction) bool { return known[t.TransactionID] }); i >= 0 {
		return dataimport.TransactionImportError(fmt.Sprintf(
			"Transaction %q was already added to the account. Nothing was added; send the request with check_previously_added=true "+
				"to skip transactions added earlier.", add[i].TransactionID), add[i])
	}
	return err
}

// knownTransactionIDs returns which of txs' IDs the account already has.
func knownTransactionIDs(tx *gorm.DB, accountID int64, txs []dataimport.Transaction) (map[string]bool, error) {
	ids := make([]string, len(txs))
	for i, t := range txs {
		ids[i] = t.TransactionID
	}
	var found []string
	err := tx.Raw(`SELECT transaction_id FROM account_transactions
		WHERE account_id = ? AND transaction_id IN (SELECT jsonb_array_elements_text(?::jsonb))`, accountID, jsonText(ids)).Scan(&found).Error
	if err != nil {
		return nil, fmt.Errorf("load transaction ids: %w", err)
	}
	out := make(map[string]bool, len(found))
	for _, id := range found {
		out[id] = true
	}
	return out, nil
}

// OpenStatementPeriod is an account's open statement.
type OpenStatementPeriod struct {
	ID       int64
	From, To dataimport.Date
}

// openStatement loads the account's one open statement.
func openStatement(tx *gorm.DB, accountID int64) (OpenStatementPeriod, error) {
	var rows []struct {
		ID                   int64
		PeriodFrom, PeriodTo time.Time
	}
	if err := tx.Raw(`SELECT id, period_from, period_to FROM statements WHERE account_id = ? AND status = 'OPEN'`, accountID).
		Scan(&rows).Error; err != nil {
		return OpenStatementPeriod{}, fmt.Errorf("load open statement: %w", err)
	}
	if len(rows) != 1 {
		// Creation opens one and `statement open` swaps it in one
		// transaction, so this is a broken invariant, not a partner error.
		return OpenStatementPeriod{}, fmt.Errorf("account %d has %d open statements, want 1", accountID, len(rows))
	}
	return OpenStatementPeriod{ID: rows[0].ID, From: dataimport.DateOf(rows[0].PeriodFrom.UTC()), To: dataimport.DateOf(rows[0].PeriodTo.UTC())}, nil
}
