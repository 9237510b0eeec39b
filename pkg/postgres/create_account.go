package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/shopspring/decimal"
	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// CreationInput is everything one account-creation attempt needs.
type CreationInput struct {
	ProcessID int64
	Attempt   int
	DryRun    bool
	Supplier  dataimport.Supplier
	Account   *dataimport.Account // validated and normalised
	Now       time.Time
	// Instructions are the account's payment_instructions as the vendor
	// confirmed them (details filled), in order. The caller verifies them
	// before calling CreateAccount, so no transaction is open across a
	// vendor call; one missing or different is refused here.
	Instructions []dataimport.PaymentInstruction
}

// CreationResult is what a committed creation produced.
type CreationResult struct {
	AccountID             int64
	PlatformAccountNumber string
	WelcomeEmailIDs       []int64
	// AlreadyCreated: an earlier run of this job committed; nothing was done now.
	AlreadyCreated bool
}

var (
	// ErrDryRun is returned after a dry run did all the work and rolled back.
	ErrDryRun = errors.New("dry run rolled back")
	// ErrStaleAttempt means the process is no longer running this attempt.
	ErrStaleAttempt = errors.New("attempt is no longer in progress")
)

// LoadedProcess is a process with its latest staged payload and supplier.
type LoadedProcess struct {
	Process  dataimport.ImportProcess
	Supplier dataimport.Supplier
	Payload  []byte
}

// LoadForCreation reads, in one query, what the worker needs to create an
// account: the process, its supplier and its latest staged payload.
func (db *DB) LoadForCreation(ctx context.Context, processID int64) (LoadedProcess, error) {
	var p processRow
	var sup supplierRow
	var payload *string
	err := db.sql.QueryRowContext(ctx, `
		SELECT p.id, p.supplier_id, p.external_account_number, p.status, p.skipped, p.staged_version, p.attempt,
		       p.dry_run, p.v2_status, p.window_start, p.window_end, p.latest_error, p.platform_account_number, p.account_created_at, p.created_at, p.modified_at,
		       s.id, s.code, s.status, s.document_root, s.welcome_email, s.phone_region, s.require_products, s.market, v.payload::text
		  FROM import_processes p
		  JOIN import_suppliers s ON s.id = p.supplier_id
		  LEFT JOIN import_process_versions v ON v.process_id = p.id AND v.version = p.staged_version
		 WHERE p.id = $1`, processID).Scan(
		&p.ID, &p.SupplierID, &p.ExternalAccountNumber, &p.Status, &p.Skipped, &p.StagedVersion, &p.Attempt,
		&p.DryRun, &p.V2Status, &p.WindowStart, &p.WindowEnd, &p.LatestError, &p.PlatformAccountNumber, &p.AccountCreatedAt, &p.CreatedAt, &p.ModifiedAt,
		&sup.ID, &sup.Code, &sup.Status, &sup.DocumentRoot, &sup.WelcomeEmail, &sup.PhoneRegion, &sup.RequireProducts, &sup.Market, &payload)
	if err != nil {
		return LoadedProcess{}, fmt.Errorf("load process %d: %w", processID, err)
	}
	out := LoadedProcess{Process: p.domain(), Supplier: sup.domain()}
	if payload != nil {
		out.Payload = []byte(*payload)
	}
	return out, nil
}

// CreateAccount creates the account and everything in it in one
// transaction, links it to the import process and records the outcome. Run
// twice for the same attempt (a retried job), the second run finds the first
// one's account and does nothing. A dry run does the same work and rolls back.
//
// The transaction is one round trip whatever the account's size, after one
// that draws its rows' ids (see create_batch.go), and concurrent calls share
// it (create_group.go); a
// platform-number collision, decided by the unique constraint, redoes it
// with a fresh number.
func (db *DB) CreateAccount(ctx context.Context, in CreationInput) (CreationResult, error) {
	if in.DryRun {
		// A dry run's transaction is rolled back: it cannot carry others.
		return db.createAccountAlone(ctx, in)
	}
	res, err := db.creator.run(ctx, in)
	if err == nil && !res.AlreadyCreated && res.AccountID > 0 {
		db.keepCreated(res.AccountID) // landed_keep.go
	}
	return res, err
}

// CreateAccounts is CreateAccount for several accounts at once, queued
// together so that they share a transaction; each has its own outcome.
// A dry run is created alone.
func (db *DB) CreateAccounts(ctx context.Context, ins []CreationInput) ([]CreationResult, []error) {
	var shared []CreationInput
	var at []int
	res := make([]CreationResult, len(ins))
	errs := make([]error, len(ins))
	for i, in := range ins {
		if in.DryRun {
			res[i], errs[i] = db.createAccountAlone(ctx, in)
			continue
		}
		shared, at = append(shared, in), append(at, i)
	}
	out, outErrs := db.creator.runAll(ctx, shared)
	for k, i := range at {
		res[i], errs[i] = out[k], outErrs[k]
		if errs[i] == nil && !res[i].AlreadyCreated && res[i].AccountID > 0 {
			db.keepCreated(res[i].AccountID)
		}
	}
	return res, errs
}

// newCreateGroup is the group commit of per-account creations, with a
// transaction per flusher at once.
func (db *DB) newCreateGroup(flushers int) *createGroup {
	return newCreateGroup(flushers, groupMaxBatch, db.createAccountsGrouped, db.createAccountAlone)
}

// createAccountsGrouped creates accounts of unrelated processes in one
// transaction, each with a fresh platform number.
func (db *DB) createAccountsGrouped(ctx context.Context, ins []CreationInput) ([]CreationResult, error) {
	numbers := make([]string, len(ins))
	for i := range numbers {
		n, err := platformNumbers()
		if err != nil {
			return nil, err
		}
		numbers[i] = n
	}
	return db.createAccountsOnce(ctx, 0, ins, numbers)
}

// createAccountAlone creates one account in a transaction of its own.
func (db *DB) createAccountAlone(ctx context.Context, in CreationInput) (CreationResult, error) {
	for range 10 {
		number, err := platformNumbers()
		if err != nil {
			return CreationResult{}, err
		}
		res, err := db.createAccountOnce(ctx, in, number)
		if isConstraint(err, "accounts_platform_account_number_key") {
			continue
		}
		return res, err
	}
	return CreationResult{}, errors.New("create account: no free platform account number after 10 draws")
}

// accountDetails keeps the account-level fields that have no column of their
// own, exactly as validated.
func accountDetails(a *dataimport.Account) ([]byte, error) {
	d := *a
	d.Customers, d.SupplyAddresses, d.Notes, d.CurrentStatementTransactions = nil, nil, nil, nil
	d.PaymentSchedules, d.PaymentInstructions = nil, nil // rows of their own
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("encode account details: %w", err)
	}
	return b, nil
}

// openingBalance is the account's balance once its opening transactions are
// in: transfer_balance plus their effects, computed here so the account row
// is written once.
func openingBalance(a *dataimport.Account) decimal.Decimal {
	b := a.OpeningBalance()
	for i := range a.CurrentStatementTransactions {
		b = b.Add(a.CurrentStatementTransactions[i].BalanceEffect())
	}
	return b
}

// platformNumbers draws platform account numbers (a variable so a test can
// force a collision).
var platformNumbers = newPlatformAccountNumber

func newPlatformAccountNumber() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("platform account number: %w", err)
	}
	return "A-" + strings.ToUpper(hex.EncodeToString(b[:])), nil
}

type customerRow struct {
	ID                  int64 `gorm:"primaryKey"`
	AccountID           int64
	Position            int
	GivenName           string
	FamilyName          string
	Title               string
	Salutation          string
	Email               string
	Mobile              string
	Landline            string
	DateOfBirth         *time.Time
	CustomerPreferences string `gorm:"type:jsonb"`
}

func (customerRow) TableName() string { return "account_customers" }

func customerRows(accountID int64, cs []dataimport.Customer) ([]customerRow, error) {
	rows := make([]customerRow, len(cs))
	for i, c := range cs {
		prefs, err := json.Marshal(c.CustomerPreferences)
		if err != nil {
			return nil, fmt.Errorf("encode preferences: %w", err)
		}
		rows[i] = customerRow{AccountID: accountID, Position: i, GivenName: c.GivenName, FamilyName: deref(c.FamilyName),
			Title: deref(c.Title), Salutation: deref(c.Salutation), Email: deref(c.Email), Mobile: deref(c.Mobile),
			Landline: deref(c.Landline), DateOfBirth: dateTime(c.DateOfBirth), CustomerPreferences: string(prefs)}
	}
	return rows, nil
}

type noteRow struct {
	ID            int64 `gorm:"primaryKey"`
	AccountID     int64
	Body          string
	DocumentPaths string `gorm:"type:jsonb"`
	IsPinned      bool
	UnpinAt       *time.Time
	CreatedAt     time.Time
}

func (noteRow) TableName() string { return "account_notes" }

func insertNotes(tx *gorm.DB, accountID int64, notes []dataimport.Note, now time.Time) error {
	if len(notes) == 0 {
		return nil
	}
	rows, err := noteRows(accountID, notes, now)
	if err != nil {
		return err
	}
	if err := tx.Create(&rows).Error; err != nil {
		return fmt.Errorf("insert notes: %w", err)
	}
	return nil
}

func noteRows(accountID int64, notes []dataimport.Note, now time.Time) ([]noteRow, error) {
	rows := make([]noteRow, len(notes))
	for i, n := range notes {
		paths := make([]string, len(n.DocumentPaths))
		for j, p := range n.DocumentPaths {
			paths[j] = p.DocumentPath
		}
		pj, err := json.Marshal(paths)
		if err != nil {
			return nil, fmt.Errorf("encode document paths: %w", err)
		}
		created := now
		if n.CreatedAt != nil {
			created = n.CreatedAt.Time
		}
		var unpin *time.Time
		if n.UnpinAt != nil {
			t := n.UnpinAt.Time
			unpin = &t
		}
		rows[i] = noteRow{AccountID: accountID, Body: deref(n.Body), DocumentPaths: string(pj),
			IsPinned: n.IsPinned != nil && *n.IsPinned, UnpinAt: unpin, CreatedAt: created}
	}
	return rows, nil
}

type transactionRow struct {
	ID              int64 `gorm:"primaryKey"`
	AccountID       int64
	StatementID     int64
	TransactionID   string
	Type            string
	TransactionDate time.Time
	OriginalDate    *time.Time
	Amount          decimal.Decimal
	BalanceEffect   decimal.Decimal
	Description     string
	Data            string `gorm:"type:jsonb"`
}

func (transactionRow) TableName() string { return "account_transactions" }

// insertTransactions stores transactions in the open statement [from, to]
// with one multi-row INSERT and returns them as stored. With force, a date
// outside it is moved to the nearest day and described; moved counts those.
// Without force such a transaction is a *TransactionOutsidePeriodError
// naming the first one, and nothing is inserted. It is shared by account
// creation and the transactions endpoint; callers adjust the balance.
func insertTransactions(tx *gorm.DB, accountID, statementID int64, from, to dataimport.Date, txs []dataimport.Transaction, force bool) (stored []dataimport.StoredTransaction, moved int, err error) {
	if len(txs) == 0 {
		return nil, 0, nil
	}
	rows, stored, moved, err := transactionRows(accountID, statementID, from, to, txs, force)
	if err != nil {
		return nil, 0, err
	}
	if err := tx.Create(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("insert transactions: %w", err)
	}
	return stored, moved, nil
}

// transactionRows places each transaction in [from, to] (see
// insertTransactions) and returns the rows to store.
func transactionRows(accountID, statementID int64, from, to dataimport.Date, txs []dataimport.Transaction, force bool) (rows []transactionRow, stored []dataimport.StoredTransaction, moved int, err error) {
	rows = make([]transactionRow, len(txs))
	stored = make([]dataimport.StoredTransaction, len(txs))
	for i := range txs {
		t := &txs[i]
		placed, wasMoved := dataimport.PlaceInPeriod(t.TransactionDate, from, to)
		row := transactionRow{AccountID: accountID, StatementID: statementID, TransactionID: t.TransactionID, Type: string(t.Type),
			TransactionDate: placed.Time(), Amount: t.Amount.Decimal, BalanceEffect: t.BalanceEffect()}
		stored[i] = dataimport.StoredTransaction{Transaction: *t}
		if wasMoved {
			if !force {
				return nil, nil, 0, &TransactionOutsidePeriodError{Index: i, From: from, To: to}
			}
			moved++
			orig := t.TransactionDate
			row.OriginalDate = ptrTime(orig.Time())
			row.Description = dataimport.MovedDescription(orig, placed)
			stored[i].TransactionDate = placed
			stored[i].OriginalTransactionDate = &orig
			stored[i].Description = row.Description
		}
		data, err := json.Marshal(t)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("encode transaction: %w", err)
		}
		row.Data = string(data)
		rows[i] = row
	}
	return rows, stored, moved, nil
}

func ptrTime(t time.Time) *time.Time { return &t }

// TransactionOutsidePeriodError names the first transaction dated outside
// the open statement when moving is not allowed.
type TransactionOutsidePeriodError struct {
	Index    int
	From, To dataimport.Date
}

func (e *TransactionOutsidePeriodError) Error() string {
	return fmt.Sprintf("transaction %d is dated outside the open statement period %s to %s", e.Index, e.From, e.To)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func dateTime(d *dataimport.Date) *time.Time {
	if d == nil {
		return nil
	}
	t := d.Time()
	return &t
}
