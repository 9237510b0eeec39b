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
// as one pipelined batch: BEGIN, a guard that locks the process rows and
// aborts unless each attempt is still the current one, one INSERT per table
// and the statement that completes the processes (create_rows.go), and
// COMMIT. The ids that rows point at were drawn from their sequences just
// before, outside the transaction, so no statement waits for another's
// RETURNING rows and none joins.
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
	// Every row is encoded before the transaction starts, so the row locks
	// and the writer slot are held only for the round trip.
	var rows creationRows
	results := make([]*CreationResult, len(ins))
	for i, in := range ins {
		if err := rows.add(in, numbers[i]); err != nil {
			return nil, err
		}
		results[i] = &CreationResult{PlatformAccountNumber: numbers[i]}
	}
	if err := db.reserveIDs(ctx, &rows); err != nil {
		return nil, err
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
		out, txErr = createAccountsTx(ctx, pc, jobID, ins, &rows, results, dryRun)
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

// reserveIDs draws the rows' ids on a connection of the pool, before the
// writer slot is taken: drawing ids locks nothing.
func (db *DB) reserveIDs(ctx context.Context, rows *creationRows) error {
	conn, err := db.sql.Conn(ctx)
	if err != nil {
		return fmt.Errorf("create account: %w", err)
	}
	defer conn.Close()
	roundTrips.Add(1)
	return conn.Raw(func(dc any) error {
		return rows.reserveIDs(ctx, dc.(*stdlib.Conn).Conn())
	})
}

// createAccountsTx runs the transaction in one round trip: BEGIN, the job's
// guard (if any), the attempts' guard, every table's rows (see
// creationRows, which fills res), and COMMIT.
func createAccountsTx(ctx context.Context, c *pgx.Conn, jobID int64, ins []CreationInput, rows *creationRows, res []*CreationResult, dryRun bool) ([]CreationResult, error) {
	tx := &pgx.Batch{}
	tx.Queue("BEGIN")
	// Only new accounts are written here, and no digest is kept for them
	// yet: their rows need not bump landed_version (migration 00032).
	tx.Queue("SET LOCAL dataimport.creating = 'on'")
	if jobID > 0 {
		tx.Queue(`SELECT dataimport_assert(count(*) = 1, 'job not processing') FROM (
				SELECT 1 FROM import_jobs WHERE id = $1 AND state = 'PROCESSING' FOR SHARE) running`, jobID)
	}
	// Nothing of a supplier that is not Ongoing is created: the KEY SHARE
	// lock makes a pause wait for this transaction, and one that committed
	// first stops it here (hold.go).
	tx.Queue(supplierGuardSQL, supplierIDs(ins))
	// The row locks serialise competing runs of the same attempt: a second
	// run waits here, then finds the process COMPLETED and aborts. They are
	// taken in id order, so two batches never wait for each other in a circle.
	ids := make([]int64, len(ins))
	attempts := make([]int32, len(ins))
	for i, in := range ins {
		ids[i], attempts[i] = in.ProcessID, int32(in.Attempt)
	}
	tx.Queue(`SELECT dataimport_assert(count(*) = $3, 'attempt not current') FROM (
			SELECT 1 FROM import_processes p
			  JOIN unnest($1::bigint[], $2::int[]) AS u(id, attempt) ON p.id = u.id AND p.attempt = u.attempt
			 WHERE p.id = ANY($1::bigint[]) AND p.v2_status = 'IN_PROGRESS' AND p.platform_account_number IS NULL
			 ORDER BY p.id
			   FOR UPDATE OF p) current`, ids, attempts, len(ins))
	rows.queue(tx, res)
	// The account exists now: its failure records are resolved with it.
	tx.Queue(resolveCreated, ids)
	if !dryRun {
		tx.Queue("COMMIT")
	}
	roundTrips.Add(1)
	transactions.Add(1)
	if err := c.SendBatch(ctx, tx).Close(); err != nil {
		var pg *pgconn.PgError
		if errors.As(err, &pg) && pg.Code == guardFailed {
			if strings.Contains(pg.Message, "job not processing") {
				return nil, ErrJobNotProcessing
			}
			if strings.Contains(pg.Message, "supplier not ongoing") {
				return nil, ErrSupplierNotOngoing
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

// roundTrips counts the round trips of creations (the ids drawn, the
// transaction), for the test that holds a creation to a fixed number of
// them; transactions counts the creation transactions alone.
var roundTrips, transactions atomic.Int64

// writersBusy and writersPeak count creation transactions under way in this
// process, for the test that holds them to WORKER_DB_WRITERS.
var writersBusy, writersPeak atomic.Int64

func trackWriters() (done func()) {
	n := writersBusy.Add(1)
	for p := writersPeak.Load(); n > p && !writersPeak.CompareAndSwap(p, n); p = writersPeak.Load() {
	}
	return func() { writersBusy.Add(-1) }
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
