package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// The creation transaction runs on the pgx connection under database/sql,
// as one pipelined batch: BEGIN, a guard that locks the process row and
// aborts unless the attempt is still the current one, every insert, the
// process update and COMMIT. Rows that need a parent's id take it from the
// parent's sequence (currval is per session, so it is the row this
// transaction just inserted).
// A statement that fails aborts the transaction, and we roll back; a
// connection that cannot roll back is thrown away, never reused mid-transaction.

func (db *DB) createAccountOnce(ctx context.Context, in CreationInput, number string) (CreationResult, error) {
	out, err := db.createAccountsOnce(ctx, 0, []CreationInput{in}, []string{number})
	if err != nil {
		return CreationResult{}, err
	}
	return out[0], nil
}

// createAccountsOnce creates several accounts in one transaction and one
// round trip (a bulk job's batch; one account for the per-account path).
// With a jobID the transaction first takes a share lock on the job and
// aborts unless it is still PROCESSING, so a cancel, which updates the job
// row, waits for batches under way and no batch commits after it. Any
// failure rolls back the whole batch; the caller then retries the accounts
// one by one, so a bad account fails alone.
func (db *DB) createAccountsOnce(ctx context.Context, jobID int64, ins []CreationInput, numbers []string) ([]CreationResult, error) {
	// Every row is encoded before the transaction starts, so the row lock
	// and the writer slot are held only for the round trips.
	batches := make([]*pgx.Batch, len(ins))
	results := make([]*CreationResult, len(ins))
	for i, in := range ins {
		b, res, err := creationBatch(in, numbers[i])
		if err != nil {
			return nil, err
		}
		batches[i], results[i] = b, res
	}
	if db.writers != nil {
		if err := db.writers.Acquire(ctx, 1); err != nil {
			return nil, fmt.Errorf("create account: wait for a writer: %w", err)
		}
		defer db.writers.Release(1)
	}
	defer trackWriters()()
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("create account: %w", err)
	}
	defer conn.Close()
	var out []CreationResult
	var txErr error
	dryRun := len(ins) == 1 && ins[0].DryRun
	err = conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		out, txErr = createAccountsTx(ctx, pc, jobID, ins, batches, results, dryRun)
		if txErr == nil {
			return nil
		}
		if _, err := pc.Exec(context.WithoutCancel(ctx), "ROLLBACK"); err != nil {
			return driver.ErrBadConn // database/sql discards the connection
		}
		if errors.Is(txErr, errNotCurrent) && len(ins) == 1 {
			var one CreationResult
			one, txErr = notCurrent(ctx, pc, ins[0].ProcessID)
			out = []CreationResult{one}
		}
		return nil
	})
	switch {
	case txErr != nil:
		return nil, txErr
	case err != nil:
		return nil, fmt.Errorf("create account: %w", err)
	}
	return out, nil
}

// createAccountsTx runs the transaction in one round trip: BEGIN, the job's
// guard (if any), then for each account its guard and every write (built by
// creationBatch, whose answers fill res), and COMMIT.
func createAccountsTx(ctx context.Context, c *pgx.Conn, jobID int64, ins []CreationInput, bs []*pgx.Batch, res []*CreationResult, dryRun bool) ([]CreationResult, error) {
	tx := &pgx.Batch{}
	tx.Queue("BEGIN")
	if jobID > 0 {
		tx.Queue(`SELECT dataimport_assert(count(*) = 1, 'job not processing') FROM (
				SELECT 1 FROM import_jobs WHERE id = $1 AND state = 'PROCESSING' FOR SHARE) running`, jobID)
	}
	for i, in := range ins {
		// The row lock serialises competing runs of the same attempt: a second
		// run waits here, then finds the process COMPLETED and aborts.
		tx.Queue(`SELECT dataimport_assert(count(*) = 1, 'attempt not current') FROM (
				SELECT 1 FROM import_processes
				 WHERE id = $1 AND v2_status = 'IN_PROGRESS' AND attempt = $2 AND platform_account_number IS NULL
				   FOR UPDATE) current`, in.ProcessID, in.Attempt)
		tx.QueuedQueries = append(tx.QueuedQueries, bs[i].QueuedQueries...)
	}
	if !dryRun {
		tx.Queue("COMMIT")
	}
	roundTrips.Add(1)
	if err := c.SendBatch(ctx, tx).Close(); err != nil {
		var pg *pgconn.PgError
		if errors.As(err, &pg) && pg.Code == guardFailed {
			if strings.Contains(pg.Message, "job not processing") {
				return nil, ErrJobNotProcessing
			}
			return nil, errNotCurrent
		}
		return nil, fmt.Errorf("create account: %w", err)
	}
	if dryRun {
		return nil, ErrDryRun // rolled back by the caller
	}
	out := make([]CreationResult, len(res))
	for i, r := range res {
		out[i] = *r
	}
	return out, nil
}

// ErrJobNotProcessing: a bulk job's batch found its job no longer
// PROCESSING (cancelled); nothing of the batch was kept.
var ErrJobNotProcessing = errors.New("job is no longer processing")

// guardFailed is dataimport_assert's SQLSTATE (migration 00006).
const guardFailed = "DIA01"

// errNotCurrent: the guard found the attempt no longer current.
var errNotCurrent = errors.New("attempt not current")

// notCurrent tells, after the rollback, why the guard refused: the account
// exists already (an earlier run of this attempt committed it), or the
// attempt is stale.
func notCurrent(ctx context.Context, c *pgx.Conn, processID int64) (CreationResult, error) {
	var existing *string
	err := c.QueryRow(ctx, `SELECT platform_account_number FROM import_processes WHERE id = $1`, processID).Scan(&existing)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return CreationResult{}, ErrStaleAttempt
	case err != nil:
		return CreationResult{}, fmt.Errorf("create account: %w", err)
	case existing != nil:
		return CreationResult{PlatformAccountNumber: *existing, AlreadyCreated: true}, nil
	}
	return CreationResult{}, ErrStaleAttempt
}

// roundTrips counts creation batches sent, for the test that holds the
// creation transaction to a fixed number of round trips.
var roundTrips atomic.Int64

// writersBusy and writersPeak count creation transactions under way in this
// process, for the test that holds them to WORKER_DB_WRITERS.
var writersBusy, writersPeak atomic.Int64

func trackWriters() (done func()) {
	n := writersBusy.Add(1)
	for p := writersPeak.Load(); n > p && !writersPeak.CompareAndSwap(p, n); p = writersPeak.Load() {
	}
	return func() { writersBusy.Add(-1) }
}

const (
	curAccount   = "currval('accounts_id_seq')"
	curAddress   = "currval('supply_addresses_id_seq')"
	curMeter     = "currval('meter_points_id_seq')"
	curStatement = "currval('statements_id_seq')"
	curCustomer  = "currval('account_customers_id_seq')"
	curMeterRow  = "currval('meters_id_seq')"
)

// queueMeters queues a meter point's meters, each with its registers and
// readings, in the same batch (no extra round trip).
func queueMeters(b *pgx.Batch, meters []dataimport.Meter) {
	for _, m := range meters {
		b.Queue(`INSERT INTO meters (account_id, meter_point_id, serial_number) VALUES (`+curAccount+`, `+curMeter+`, $1)`, m.SerialNumber)
		for _, r := range m.Registers {
			b.Queue(`INSERT INTO meter_registers (meter_id, register_id, number_of_digits, rate_type) VALUES (`+curMeterRow+`, $1, $2, $3)`,
				r.RegisterID, r.NumberOfDigits, deref(r.RateType))
		}
		for _, r := range m.TransferReadings {
			b.Queue(`INSERT INTO transfer_readings (meter_id, register_id, reading_date, reading_value, reading_type) VALUES (`+curMeterRow+`, $1, $2, $3, $4)`,
				r.RegisterID, r.ReadingDate.Time(), r.ReadingValue, deref(r.ReadingType))
		}
	}
}

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

	if err := verifiedInstructions(a, in.Instructions); err != nil {
		return nil, nil, err
	}

	b := &pgx.Batch{}
	b.Queue(`INSERT INTO accounts (platform_account_number, supplier_id, import_process_id, external_account_number,
			account_type, details, transfer_balance, balance, created_at)
		VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9) RETURNING id`,
		number, in.Supplier.ID, in.ProcessID, a.ExternalAccountNumber, string(a.Type()),
		string(details), a.OpeningBalance(), openingBalance(a), in.Now).
		QueryRow(func(r pgx.Row) error { return r.Scan(&res.AccountID) })
	for i, c := range customers {
		b.Queue(`INSERT INTO account_customers (account_id, position, given_name, family_name, title, salutation, email,
				mobile, landline, date_of_birth, customer_preferences)
			VALUES (`+curAccount+`, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb)`,
			c.Position, c.GivenName, c.FamilyName, c.Title, c.Salutation, c.Email, c.Mobile, c.Landline, c.DateOfBirth, c.CustomerPreferences)
		for _, e := range a.Customers[i].PSR {
			b.Queue(`INSERT INTO customer_psr (customer_id, code, effective_from, effective_to) VALUES (`+curCustomer+`, $1, $2, $3)`,
				e.Code, dateTime(e.EffectiveFrom), dateTime(e.EffectiveTo))
		}
	}
	for i, sa := range a.SupplyAddresses {
		b.Queue(`INSERT INTO supply_addresses (account_id, position, supply_address1, supply_address2, supply_address3,
				supply_address4, supply_address5, supply_postcode, customer_at_supply_address_from_date)
			VALUES (`+curAccount+`, $1, $2, $3, $4, $5, $6, $7, $8)`,
			i, sa.SupplyAddress1, deref(sa.SupplyAddress2), deref(sa.SupplyAddress3), deref(sa.SupplyAddress4),
			deref(sa.SupplyAddress5), sa.SupplyPostcode, dateTime(sa.CustomerAtSupplyAddressFromDate))
		for _, mp := range sa.MeterPoints {
			b.Queue(`INSERT INTO meter_points (account_id, supply_address_id, mpxn, fuel, supply_start_date, supply_end_date,
					profile_class, ssc, estimated_annual_consumption)
				VALUES (`+curAccount+`, `+curAddress+`, $1, $2, $3, $4, $5, $6, $7)`,
				mp.MPXN, string(mp.Fuel), mp.SupplyStartDate.Time(), dateTime(mp.SupplyEndDate), mp.ProfileClass, mp.SSC, mp.EstimatedAnnualConsumption)
			for _, ag := range mp.Agreements {
				b.Queue(`INSERT INTO agreements (meter_point_id, tariff_code, product_code, valid_from, valid_to) VALUES (`+curMeter+`, $1, $2, $3, $4)`,
					ag.TariffCode, ag.ProductCode, ag.ValidFrom.Time(), dateTime(ag.ValidTo))
			}
			queueMeters(b, mp.Meters)
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
	for i, ps := range a.PaymentSchedules {
		b.Queue(`INSERT INTO account_payment_schedules (account_id, position, means, start_date, frequency, amount)
			VALUES (`+curAccount+`, $1, $2, $3, $4, $5)`,
			i, string(ps.Means), ps.StartDate.Time(), string(ps.Frequency), ps.Amount.Decimal)
	}
	for _, pi := range in.Instructions {
		d := pi.Details
		b.Queue(`INSERT INTO payment_instructions (account_id, vendor, reference, type, status,
				card_brand, card_last4, card_exp_month, card_exp_year, mandate_status)
			VALUES (`+curAccount+`, $1, $2, $3, 'ACTIVE', $4, $5, $6, $7, $8)`,
			pi.Vendor, pi.Reference, string(pi.Type),
			nullIfZero(d.CardBrand), nullIfZero(d.CardLast4), nullIfZero(d.CardExpMonth), nullIfZero(d.CardExpYear), nullIfZero(d.MandateStatus))
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
	// Complete the process, record the attempt and its event in one statement.
	b.Queue(`WITH done AS (
			UPDATE import_processes SET status = 'COMPLETED', v2_status = 'PROCESSED', platform_account_number = $1,
			       account_created_at = $2, latest_error = NULL, dry_run = false, modified_at = now()
			 WHERE id = $3 RETURNING id, attempt
		), a AS (
			INSERT INTO import_attempts (process_id, attempt, outcome, platform_account_number)
			SELECT id, attempt, 'COMPLETED', $1 FROM done
		)
		INSERT INTO import_process_events (process_id, event, data)
		SELECT id, $4, jsonb_build_object('attempt', attempt, 'platform_account_number', $1::text) FROM done`,
		number, in.Now, in.ProcessID, dataimport.EventProcessed)
	return b, res, nil
}

// errUnverifiedInstruction: the caller did not verify the account's payment
// instructions at the vendor (a programming error, never data).
var errUnverifiedInstruction = errors.New("create account: payment instructions not verified at the vendor")

// verifiedInstructions checks that got is the account's payment
// instructions, in order, each with the vendor's details.
func verifiedInstructions(a *dataimport.Account, got []dataimport.PaymentInstruction) error {
	if len(got) != len(a.PaymentInstructions) {
		return fmt.Errorf("%w: %d given for %d", errUnverifiedInstruction, len(got), len(a.PaymentInstructions))
	}
	for i, p := range a.PaymentInstructions {
		if !got[i].SameAs(p.Instruction()) || got[i].Details == (dataimport.PaymentDetails{}) {
			return fmt.Errorf("%w: %s %s", errUnverifiedInstruction, p.Vendor, p.Reference)
		}
	}
	return nil
}

// isConstraint reports whether err is a violation of the named constraint.
func isConstraint(err error, name string) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.ConstraintName == name
}
