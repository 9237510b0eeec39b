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
		       p.latest_error, p.platform_account_number, p.account_created_at, p.created_at, p.modified_at,
		       s.id, s.code, s.status, s.document_root, s.welcome_email, s.phone_region, v.payload::text
		  FROM import_processes p
		  JOIN import_suppliers s ON s.id = p.supplier_id
		  LEFT JOIN import_process_versions v ON v.process_id = p.id AND v.version = p.staged_version
		 WHERE p.id = $1`, processID).Scan(
		&p.ID, &p.SupplierID, &p.ExternalAccountNumber, &p.Status, &p.Skipped, &p.StagedVersion, &p.Attempt,
		&p.LatestError, &p.PlatformAccountNumber, &p.AccountCreatedAt, &p.CreatedAt, &p.ModifiedAt,
		&sup.ID, &sup.Code, &sup.Status, &sup.DocumentRoot, &sup.WelcomeEmail, &sup.PhoneRegion, &payload)
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
func (db *DB) CreateAccount(ctx context.Context, in CreationInput) (CreationResult, error) {
	var res CreationResult
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var proc processRow
		// The row lock serialises competing runs of the same attempt.
		if err := tx.Raw(`SELECT * FROM import_processes WHERE id = ? FOR UPDATE`, in.ProcessID).Scan(&proc).Error; err != nil {
			return fmt.Errorf("lock process: %w", err)
		}
		if proc.PlatformAccountNumber != nil {
			res = CreationResult{PlatformAccountNumber: *proc.PlatformAccountNumber, AlreadyCreated: true}
			return nil
		}
		if proc.ID == 0 || proc.Status != string(dataimport.StatusInProgress) || proc.Attempt != in.Attempt {
			return ErrStaleAttempt
		}
		var err error
		res, err = insertAccount(tx, in, proc)
		if err != nil {
			return err
		}
		if in.DryRun {
			return ErrDryRun
		}
		return nil
	})
	if err != nil {
		return CreationResult{}, err
	}
	return res, nil
}

func insertAccount(tx *gorm.DB, in CreationInput, proc processRow) (CreationResult, error) {
	a := in.Account
	details, err := accountDetails(a)
	if err != nil {
		return CreationResult{}, err
	}
	accountID, number, err := insertAccountRow(tx, in, details)
	if err != nil {
		return CreationResult{}, err
	}
	customerIDs, err := insertCustomers(tx, accountID, a.Customers)
	if err != nil {
		return CreationResult{}, err
	}
	if err := insertSupply(tx, accountID, a.SupplyAddresses); err != nil {
		return CreationResult{}, err
	}
	from, to := a.FirstStatementPeriod(dataimport.DateOf(in.Now))
	var statementID int64
	if err := tx.Raw(`INSERT INTO statements (account_id, period_from, period_to) VALUES (?, ?, ?) RETURNING id`,
		accountID, from.Time(), to.Time()).Scan(&statementID).Error; err != nil {
		return CreationResult{}, fmt.Errorf("insert statement: %w", err)
	}
	notes := a.Notes
	_, moved, err := insertTransactions(tx, accountID, statementID, from, to, a.CurrentStatementTransactions, true)
	if err != nil {
		return CreationResult{}, err
	}
	if moved > 0 {
		notes = append(notes[:len(notes):len(notes)], dataimport.MovedNote(moved, from, to))
	}
	if err := insertNotes(tx, accountID, notes, in.Now); err != nil {
		return CreationResult{}, err
	}
	var emailIDs []int64
	if in.Supplier.WelcomeEmail && !in.DryRun {
		if emailIDs, err = insertWelcomeEmails(tx, accountID, a.Customers, customerIDs); err != nil {
			return CreationResult{}, err
		}
	}
	// Complete the process and record the attempt in one round trip.
	if err := tx.Exec(`WITH done AS (
			UPDATE import_processes SET status = 'COMPLETED', platform_account_number = ?, account_created_at = ?,
			       latest_error = NULL, dry_run = false, modified_at = now()
			 WHERE id = ? RETURNING id, attempt)
		INSERT INTO import_attempts (process_id, attempt, outcome, platform_account_number)
		SELECT id, attempt, 'COMPLETED', ? FROM done`, number, in.Now, proc.ID, number).Error; err != nil {
		return CreationResult{}, fmt.Errorf("complete process: %w", err)
	}
	return CreationResult{AccountID: accountID, PlatformAccountNumber: number, WelcomeEmailIDs: emailIDs}, nil
}

// accountDetails keeps the account-level fields that have no column of their
// own, exactly as validated.
func accountDetails(a *dataimport.Account) ([]byte, error) {
	d := *a
	d.Customers, d.SupplyAddresses, d.Notes, d.CurrentStatementTransactions = nil, nil, nil, nil
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

// insertAccountRow picks a random A-XXXXXXXX number; the unique constraint
// decides collisions and we simply draw again.
func insertAccountRow(tx *gorm.DB, in CreationInput, details []byte) (int64, string, error) {
	for range 10 {
		number, err := newPlatformAccountNumber()
		if err != nil {
			return 0, "", err
		}
		var ids []int64
		err = tx.Raw(`INSERT INTO accounts (platform_account_number, supplier_id, import_process_id, external_account_number,
				account_type, details, transfer_balance, balance, created_at)
			VALUES (?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?)
			ON CONFLICT (platform_account_number) DO NOTHING RETURNING id`,
			number, in.Supplier.ID, in.ProcessID, in.Account.ExternalAccountNumber, string(in.Account.Type()),
			string(details), in.Account.OpeningBalance(), openingBalance(in.Account), in.Now).Scan(&ids).Error
		if err != nil {
			return 0, "", fmt.Errorf("insert account: %w", err)
		}
		if len(ids) == 1 {
			return ids[0], number, nil
		}
	}
	return 0, "", errors.New("insert account: no free platform account number after 10 draws")
}

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

func insertCustomers(tx *gorm.DB, accountID int64, cs []dataimport.Customer) ([]int64, error) {
	if len(cs) == 0 {
		return nil, nil
	}
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
	if err := tx.Create(&rows).Error; err != nil {
		return nil, fmt.Errorf("insert customers: %w", err)
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	return ids, nil
}

type supplyAddressRow struct {
	ID                              int64 `gorm:"primaryKey"`
	AccountID                       int64
	Position                        int
	SupplyAddress1                  string `gorm:"column:supply_address1"`
	SupplyAddress2                  string `gorm:"column:supply_address2"`
	SupplyAddress3                  string `gorm:"column:supply_address3"`
	SupplyAddress4                  string `gorm:"column:supply_address4"`
	SupplyAddress5                  string `gorm:"column:supply_address5"`
	SupplyPostcode                  string
	CustomerAtSupplyAddressFromDate *time.Time
}

func (supplyAddressRow) TableName() string { return "supply_addresses" }

type meterPointRow struct {
	ID              int64 `gorm:"primaryKey"`
	AccountID       int64
	SupplyAddressID int64
	MPXN            string `gorm:"column:mpxn"`
	Fuel            string
	SupplyStartDate time.Time
	SupplyEndDate   *time.Time
}

func (meterPointRow) TableName() string { return "meter_points" }

type agreementRow struct {
	ID           int64 `gorm:"primaryKey"`
	MeterPointID int64
	ProductCode  string
	ValidFrom    time.Time
	ValidTo      *time.Time
}

func (agreementRow) TableName() string { return "agreements" }

// insertSupply writes addresses, meter points and agreements with one
// multi-row INSERT per level (no per-row round trips).
func insertSupply(tx *gorm.DB, accountID int64, sas []dataimport.SupplyAddress) error {
	if len(sas) == 0 {
		return nil
	}
	addrs := make([]supplyAddressRow, len(sas))
	for i, sa := range sas {
		addrs[i] = supplyAddressRow{AccountID: accountID, Position: i, SupplyAddress1: sa.SupplyAddress1,
			SupplyAddress2: deref(sa.SupplyAddress2), SupplyAddress3: deref(sa.SupplyAddress3), SupplyAddress4: deref(sa.SupplyAddress4),
			SupplyAddress5: deref(sa.SupplyAddress5), SupplyPostcode: sa.SupplyPostcode,
			CustomerAtSupplyAddressFromDate: dateTime(sa.CustomerAtSupplyAddressFromDate)}
	}
	if err := tx.Create(&addrs).Error; err != nil {
		return fmt.Errorf("insert supply addresses: %w", err)
	}
	var mps []meterPointRow
	var mpSrc []dataimport.MeterPoint
	for i, sa := range sas {
		for _, mp := range sa.MeterPoints {
			mps = append(mps, meterPointRow{AccountID: accountID, SupplyAddressID: addrs[i].ID, MPXN: mp.MPXN, Fuel: string(mp.Fuel),
				SupplyStartDate: mp.SupplyStartDate.Time(), SupplyEndDate: dateTime(mp.SupplyEndDate)})
			mpSrc = append(mpSrc, mp)
		}
	}
	if len(mps) == 0 {
		return nil
	}
	if err := tx.Create(&mps).Error; err != nil {
		return fmt.Errorf("insert meter points: %w", err)
	}
	var ags []agreementRow
	for i, mp := range mpSrc {
		for _, ag := range mp.Agreements {
			ags = append(ags, agreementRow{MeterPointID: mps[i].ID, ProductCode: ag.ProductCode, ValidFrom: ag.ValidFrom.Time(), ValidTo: dateTime(ag.ValidTo)})
		}
	}
	if len(ags) == 0 {
		return nil
	}
	if err := tx.Create(&ags).Error; err != nil {
		return fmt.Errorf("insert agreements: %w", err)
	}
	return nil
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
	rows := make([]noteRow, len(notes))
	for i, n := range notes {
		paths := make([]string, len(n.DocumentPaths))
		for j, p := range n.DocumentPaths {
			paths[j] = p.DocumentPath
		}
		pj, err := json.Marshal(paths)
		if err != nil {
			return fmt.Errorf("encode document paths: %w", err)
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
	if err := tx.Create(&rows).Error; err != nil {
		return fmt.Errorf("insert notes: %w", err)
	}
	return nil
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
	rows := make([]transactionRow, len(txs))
	stored = make([]dataimport.StoredTransaction, len(txs))
	for i := range txs {
		t := &txs[i]
		placed, wasMoved := dataimport.PlaceInPeriod(t.TransactionDate, from, to)
		row := transactionRow{AccountID: accountID, StatementID: statementID, TransactionID: t.TransactionID, Type: string(t.Type),
			TransactionDate: placed.Time(), Amount: t.Amount.Decimal, BalanceEffect: t.BalanceEffect()}
		stored[i] = dataimport.StoredTransaction{Transaction: *t}
		if wasMoved {
			if !force {
				return nil, 0, &TransactionOutsidePeriodError{Index: i, From: from, To: to}
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
			return nil, 0, fmt.Errorf("encode transaction: %w", err)
		}
		row.Data = string(data)
		rows[i] = row
	}
	if err := tx.Create(&rows).Error; err != nil {
		return nil, 0, fmt.Errorf("insert transactions: %w", err)
	}
	return stored, moved, nil
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

func insertWelcomeEmails(tx *gorm.DB, accountID int64, cs []dataimport.Customer, customerIDs []int64) ([]int64, error) {
	var ids []int64
	for i, c := range cs {
		if c.Email == nil || *c.Email == "" {
			continue
		}
		var id int64
		if err := tx.Raw(`INSERT INTO welcome_emails (account_id, customer_id, email) VALUES (?, ?, ?) RETURNING id`,
			accountID, customerIDs[i], *c.Email).Scan(&id).Error; err != nil {
			return nil, fmt.Errorf("queue welcome e-mail: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, nil
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
