package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"gorm.io/gorm"
)

// WelcomeEmail is one row of the welcome e-mail outbox with what the message
// needs: the customer's names, the supplier and the new account's number.
type WelcomeEmail struct {
	ID                    int64
	AccountID             int64
	Email                 string
	GivenName             string
	FamilyName            string
	Title                 string
	SupplierCode          string
	PlatformAccountNumber string
	SentAt                *time.Time
}

// ErrWelcomeEmailNotFound means no outbox row has the ID (never written, or
// removed with its account).
var ErrWelcomeEmailNotFound = errors.New("welcome e-mail not found")

// ErrUndeliverable, wrapped into the error a ClaimWelcomeEmail send callback
// returns, records the failure as final: UnsentWelcomeEmails no longer lists
// the row, so a reconciler does not re-enqueue a message the mail server has
// refused for good.
var ErrUndeliverable = errors.New("welcome e-mail undeliverable")

// welcomeUndeliverablePrefix starts last_error of rows given up on.
const welcomeUndeliverablePrefix = "undeliverable: "

// welcomeLastErrorMax caps the stored error text (runes).
const welcomeLastErrorMax = 2000

const welcomeEmailSelect = `
SELECT w.id, w.account_id, w.email, c.given_name, c.family_name, c.title,
       s.code AS supplier_code, a.platform_account_number, w.sent_at
  FROM welcome_emails w
  JOIN account_customers c ON c.id = w.customer_id
  JOIN accounts a          ON a.id = w.account_id
  JOIN import_suppliers s  ON s.id = a.supplier_id
 WHERE w.id = ?`

// WelcomeEmail loads one outbox row with its customer, account and supplier.
func (db *DB) WelcomeEmail(ctx context.Context, id int64) (WelcomeEmail, error) {
	return loadWelcomeEmail(db.gorm.WithContext(ctx), id, "")
}

func loadWelcomeEmail(q *gorm.DB, id int64, suffix string) (WelcomeEmail, error) {
	var rows []WelcomeEmail
	if err := q.Raw(welcomeEmailSelect+suffix, id).Scan(&rows).Error; err != nil {
		return WelcomeEmail{}, fmt.Errorf("load welcome e-mail %d: %w", id, err)
	}
	if len(rows) == 0 {
		return WelcomeEmail{}, fmt.Errorf("welcome e-mail %d: %w", id, ErrWelcomeEmailNotFound)
	}
	return rows[0], nil
}

// ClaimWelcomeEmail sends the welcome e-mail id at most once. In one
// transaction it locks the row (SELECT … FOR UPDATE); if the e-mail was sent
// already it returns (false, nil) without calling send. Otherwise it calls
// send while holding the lock, so a second worker waits and then sees
// sent_at; on success it sets sent_at and counts the attempt, on failure it
// counts the attempt, stores last_error and returns send's error. Either way
// the outcome is committed.
//
// The bookkeeping after send is not cancelled with ctx (a worker shutting
// down mid-send still records what happened); ctx bounds the wait for the lock.
func (db *DB) ClaimWelcomeEmail(ctx context.Context, id int64, send func(WelcomeEmail) error) (sent bool, err error) {
	// database/sql rolls a transaction back when its context ends, so the
	// transaction lives on a context detached from ctx, bounded on its own.
	txCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	var sendErr error
	err = db.gorm.WithContext(txCtx).Transaction(func(tx *gorm.DB) error {
		w, err := loadWelcomeEmail(tx.WithContext(ctx), id, " FOR UPDATE OF w")
		if err != nil {
			return err
		}
		if w.SentAt != nil {
			return nil
		}
		if sendErr = send(w); sendErr == nil {
			sent = true
			if err := tx.Exec(`UPDATE welcome_emails SET sent_at = now(), attempts = attempts + 1, last_error = NULL WHERE id = ?`, id).Error; err != nil {
				return fmt.Errorf("mark welcome e-mail %d sent: %w", id, err)
			}
			return nil
		}
		msg := sendErr.Error()
		if errors.Is(sendErr, ErrUndeliverable) {
			msg = welcomeUndeliverablePrefix + msg
		}
		if utf8.RuneCountInString(msg) > welcomeLastErrorMax {
			msg = string([]rune(msg)[:welcomeLastErrorMax])
		}
		if err := tx.Exec(`UPDATE welcome_emails SET attempts = attempts + 1, last_error = ? WHERE id = ?`, msg, id).Error; err != nil {
			return fmt.Errorf("record welcome e-mail %d failure: %w", id, err)
		}
		return nil
	})
	switch {
	case err != nil && sendErr != nil:
		return false, errors.Join(sendErr, err)
	case err != nil:
		// If send succeeded but the commit failed, the e-mail went out while
		// the row still says unsent; a retry may send it again. Holding the
		// lock makes that window as small as it can be without risking the
		// opposite failure (a claimed e-mail that is never sent).
		return false, err
	case sendErr != nil:
		return false, sendErr
	}
	return sent, nil
}

// UnsentWelcomeEmails lists up to limit outbox rows, oldest first, written
// more than olderThan ago and still unsent, except those given up on as
// undeliverable: the stragglers whose job was lost or ran out of retries, for
// a reconciler to enqueue again.
func (db *DB) UnsentWelcomeEmails(ctx context.Context, olderThan time.Duration, limit int) ([]int64, error) {
	if limit <= 0 {
		return nil, nil
	}
	var ids []int64
	err := db.gorm.WithContext(ctx).Raw(`
		SELECT id FROM welcome_emails
		 WHERE sent_at IS NULL
		   AND created_at < now() - ? * interval '1 microsecond'
		   AND (last_error IS NULL OR left(last_error, ?) <> ?)
		 ORDER BY created_at, id
		 LIMIT ?`,
		olderThan.Microseconds(), len(welcomeUndeliverablePrefix), welcomeUndeliverablePrefix, limit).
		Scan(&ids).Error
	if err != nil {
		return nil, fmt.Errorf("list unsent welcome e-mails: %w", err)
	}
	return ids, nil
}
