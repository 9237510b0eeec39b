package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// The creation transaction runs on the pgx connection under database/sql,
// as two pipelined batches: BEGIN and the process row lock, then (once the
// lock shows the attempt is still ours) every insert, the process update and
// COMMIT. Rows that need a parent's id take it from the parent's sequence
// (currval is per session, so it is the row this transaction just inserted).
// A statement that fails aborts the transaction, and we roll back; a
// connection that cannot roll back is thrown away, never reused mid-transaction.

func (db *DB) createAccountOnce(ctx context.Context, in CreationInput, number string) (CreationResult, error) {
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return CreationResult{}, fmt.Errorf("create account: %w", err)
	}
	defer conn.Close()
	var res CreationResult
	var txErr error
	err = conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		res, txErr = createAccountTx(ctx, pc, in, number)
		if txErr == nil {
			return nil
		}
		if _, err := pc.Exec(context.WithoutCancel(ctx), "ROLLBACK"); err != nil {
			return driver.ErrBadConn // database/sql discards the connection
		}
		return nil
	})
	switch {
	case errors.Is(txErr, errRollback):
		return res, nil
	case txErr != nil:
		return CreationResult{}, txErr
	case err != nil:
		return CreationResult{}, fmt.Errorf("create account: %w", err)
	}
	return res, nil
}

func createAccountTx(ctx context.Context, c *pgx.Conn, in CreationInput, number string) (CreationResult, error) {
	var status string
	var attempt int
	var existing *string
	lock := &pgx.Batch{}
	lock.Queue("BEGIN")
	// The row lock serialises competing runs of the same attempt.
	lock.Queue(`SELECT status, attempt, platform_account_number FROM import_processes WHERE id = $1 FOR UPDATE`, in.ProcessID).
		QueryRow(func(r pgx.Row) error { return r.Scan(&status, &attempt, &existing) })
	roundTrips.Add(1)
	err := c.SendBatch(ctx, lock).Close()
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return CreationResult{}, ErrStaleAttempt
	case err != nil:
		return CreationResult{}, fmt.Errorf("lock process: %w", err)
	case existing != nil:
		return CreationResult{PlatformAccountNumber: *existing, AlreadyCreated: true}, errRollback
	case status != string(dataimport.StatusInProgress) || attempt != in.Attempt:
		return CreationResult{}, ErrStaleAttempt
	}

	b, res, err := creationBatch(in, number)
	if err != nil {
		return CreationResult{}, err
	}
	roundTrips.Add(1)
	if in.DryRun {
		if err := c.SendBatch(ctx, b).Close(); err != nil {
			return CreationResult{}, fmt.Errorf("create account: %w", err)
		}
		return CreationResult{}, ErrDryRun
	}
	b.Queue("COMMIT")
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		return CreationResult{}, fmt.Errorf("create account: %w", err)
	}
	return *res, nil
}

// roundTrips counts creation batches sent, for the test that holds the
// creation transaction to a fixed number of round trips.
var roundTrips atomic.Int64

// errRollback ends a transaction that found nothing to do; CreateAccount
// reports the result it came with, not an error.
var errRollback = errors.New("nothing to do")

const (
	curAccount   = "currval('accounts_id_seq')"
	curAddress   = "currval('supply_addresses_id_seq')"
	curMeter     = "currval('meter_points_id_seq')"
	curStatement = "currval('statements_id_seq')"
)

// creationBatch queues every write of one account. The returned result is
// filled in as the batch's answers are read.
func creationBatch(in CreationInput, number string) (*pgx.Batch, *CreationResult, error) {
	a := in.Account
	res := &CreationResult{PlatformAccountNumber: number}
	details, err := accountDetails(a)
	if err != nil {
		return nil, nil, err
	}
	customers, err := customerRows(0, a.Customers)
	if err != nil {
		return nil, nil, err
	}
	from, to := a.FirstStatementPeriod(dataimport.DateOf(in.Now))
	txs, _, moved, err := transactionRows(0, 0, from, to, a.CurrentStatementTransactions, true)
	if err != nil {
		return nil, nil, err
	}
	notes := a.Notes
	if moved > 0 {
		notes = append(notes[:len(notes):len(notes)], dataimport.MovedNote(moved, from, to))
	}
	noteRs, err := noteRows(0, notes, in.Now)
	if err != nil {
		return nil, nil, err
	}

	b := &pgx.Batch{}
	b.Queue(`INSERT INTO accounts (platform_account_number, supplier_id, import_process_id, external_account_number,
			account_type, details, transfer_balance, balance, created_at)
		VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9) RETURNING id`,
		number, in.Supplier.ID, in.ProcessID, a.ExternalAccountNumber, string(a.Type()),
		string(details), a.OpeningBalance(), openingBalance(a), in.Now).
		QueryRow(func(r pgx.Row) error { return r.Scan(&res.AccountID) })
	for _, c := range customers {
		b.Queue(`INSERT INTO account_customers (account_id, position, given_name, family_name, title, salutation, email,
				mobile, landline, date_of_birth, customer_preferences)
			VALUES (`+curAccount+`, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb)`,
			c.Position, c.GivenName, c.FamilyName, c.Title, c.Salutation, c.Email, c.Mobile, c.Landline, c.DateOfBirth, c.CustomerPreferences)
	}
	for i, sa := range a.SupplyAddresses {
		b.Queue(`INSERT INTO supply_addresses (account_id, position, supply_address1, supply_address2, supply_address3,
				supply_address4, supply_address5, supply_postcode, customer_at_supply_address_from_date)
			VALUES (`+curAccount+`, $1, $2, $3, $4, $5, $6, $7, $8)`,
			i, sa.SupplyAddress1, deref(sa.SupplyAddress2), deref(sa.SupplyAddress3), deref(sa.SupplyAddress4),
			deref(sa.SupplyAddress5), sa.SupplyPostcode, dateTime(sa.CustomerAtSupplyAddressFromDate))
		for _, mp := range sa.MeterPoints {
			b.Queue(`INSERT INTO meter_points (account_id, supply_address_id, mpxn, fuel, supply_start_date, supply_end_date)
				VALUES (`+curAccount+`, `+curAddress+`, $1, $2, $3, $4)`,
				mp.MPXN, string(mp.Fuel), mp.SupplyStartDate.Time(), dateTime(mp.SupplyEndDate))
			for _, ag := range mp.Agreements {
				b.Queue(`INSERT INTO agreements (meter_point_id, product_code, valid_from, valid_to) VALUES (`+curMeter+`, $1, $2, $3)`,
					ag.ProductCode, ag.ValidFrom.Time(), dateTime(ag.ValidTo))
			}
		}
	}
	b.Queue(`INSERT INTO statements (account_id, period_from, period_to) VALUES (`+curAccount+`, $1, $2)`, from.Time(), to.Time())
	for _, t := range txs {
		b.Queue(`INSERT INTO account_transactions (account_id, statement_id, transaction_id, type, transaction_date,
				original_date, amount, balance_effect, description, data)
			VALUES (`+curAccount+`, `+curStatement+`, $1, $2, $3, $4, $5, $6, $7, $8::jsonb)`,
			t.TransactionID, t.Type, t.TransactionDate, t.OriginalDate, t.Amount, t.BalanceEffect, t.Description, t.Data)
	}
	for _, n := range noteRs {
		b.Queue(`INSERT INTO account_notes (account_id, body, document_paths, is_pinned, unpin_at, created_at)
			VALUES (`+curAccount+`, $1, $2::jsonb, $3, $4, $5)`, n.Body, n.DocumentPaths, n.IsPinned, n.UnpinAt, n.CreatedAt)
	}
	if in.Supplier.WelcomeEmail && !in.DryRun {
		// The outbox: one e-mail per customer with an address, in order.
		b.Queue(`INSERT INTO welcome_emails (account_id, customer_id, email)
			SELECT account_id, id, email FROM account_customers
			 WHERE account_id = ` + curAccount + ` AND email <> '' ORDER BY position RETURNING id`).
			Query(func(rows pgx.Rows) error {
				ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
				res.WelcomeEmailIDs = ids
				return err
			})
	}
	// Complete the process and record the attempt in one statement.
	b.Queue(`WITH done AS (
			UPDATE import_processes SET status = 'COMPLETED', platform_account_number = $1, account_created_at = $2,
			       latest_error = NULL, dry_run = false, modified_at = now()
			 WHERE id = $3 RETURNING id, attempt)
		INSERT INTO import_attempts (process_id, attempt, outcome, platform_account_number)
		SELECT id, attempt, 'COMPLETED', $1 FROM done`, number, in.Now, in.ProcessID)
	return b, res, nil
}

// isConstraint reports whether err is a violation of the named constraint.
func isConstraint(err error, name string) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.ConstraintName == name
}
