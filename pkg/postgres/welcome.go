package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/storable"
)

// States of a welcome e-mail (migration 00008). Only a claim (pending →
// sending) allows a send, and each statement below is its own short
// transaction: none is open while the SMTP conversation runs.
const (
	WelcomePending       = "pending"       // not sent; the next attempt may claim it
	WelcomeSending       = "sending"       // claimed: one attempt is sending it, or died doing so
	WelcomeSent          = "sent"          // accepted by the mail server
	WelcomeUnknown       = "unknown"       // an attempt was interrupted after its claim: maybe sent; an operator decides
	WelcomeUndeliverable = "undeliverable" // refused for good by the mail server
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
	State                 string
	Attempts              int    // claims so far; the current claim's number while sending
	MessageID             string // left part of the Message-ID, set by the first claim
	ClaimedAt             *time.Time
	SentAt                *time.Time
	LastError             *string
}

// ErrWelcomeEmailNotFound means no outbox row has the ID (never written, or
// removed with its account).
var ErrWelcomeEmailNotFound = errors.New("welcome e-mail not found")

// ErrWelcomeEmailNotUnknown is ResendWelcomeEmail's answer for a row whose
// outcome is known (or still being decided): only unknown ones are resent.
var ErrWelcomeEmailNotUnknown = errors.New("welcome e-mail is not in state unknown")

// welcomeLastErrorMax caps the stored error text (bytes).
const welcomeLastErrorMax = 2000

const welcomeEmailSelect = `
SELECT w.id, w.account_id, w.email, c.given_name, c.family_name, c.title,
       s.code AS supplier_code, a.platform_account_number,
       w.state, w.attempts, coalesce(w.message_id, '') AS message_id, w.claimed_at, w.sent_at, w.last_error
  FROM welcome_emails w
  JOIN account_customers c ON c.id = w.customer_id
  JOIN accounts a          ON a.id = w.account_id
  JOIN import_suppliers s  ON s.id = a.supplier_id`

// WelcomeEmail loads one outbox row with its customer, account and supplier.
func (db *DB) WelcomeEmail(ctx context.Context, id int64) (WelcomeEmail, error) {
	var rows []WelcomeEmail
	if err := db.gorm.WithContext(ctx).Raw(welcomeEmailSelect+` WHERE w.id = ?`, id).Scan(&rows).Error; err != nil {
		return WelcomeEmail{}, fmt.Errorf("load welcome e-mail %d: %w", id, err)
	}
	if len(rows) == 0 {
		return WelcomeEmail{}, fmt.Errorf("welcome e-mail %d: %w", id, ErrWelcomeEmailNotFound)
	}
	return rows[0], nil
}

// ClaimWelcomeEmail moves e-mail id from pending to sending in one statement:
// attempts+1, claimed_at = now() and the deterministic Message-ID
// welcome-<id>.<account number> (the same on every claim, so a deliberate
// resend carries the same Message-ID and a relay or mail client can drop the
// copy). claimed reports whether this call made the claim and may send; the
// row is returned either way, as it is after the call.
func (db *DB) ClaimWelcomeEmail(ctx context.Context, id int64) (w WelcomeEmail, claimed bool, err error) {
	res := db.gorm.WithContext(ctx).Exec(`
		UPDATE welcome_emails w
		   SET state = 'sending', claimed_at = now(), attempts = w.attempts + 1,
		       message_id = 'welcome-' || w.id || '.' || a.platform_account_number
		  FROM accounts a
		 WHERE w.id = ? AND w.state = 'pending' AND a.id = w.account_id`, id)
	if res.Error != nil {
		return WelcomeEmail{}, false, fmt.Errorf("claim welcome e-mail %d: %w", id, res.Error)
	}
	w, err = db.WelcomeEmail(ctx, id)
	return w, res.RowsAffected == 1, err
}

// FinishWelcomeEmail records the outcome of claim number attempt: state is
// WelcomeSent, WelcomePending (definitely not delivered: a later attempt may
// claim it again), WelcomeUndeliverable or WelcomeUnknown; failure is the
// error text (empty on success). It applies only while that claim is the
// row's latest and its outcome is open (sending, or flagged unknown by
// another attempt that thought this one dead, since this one now knows
// better); recorded reports whether it applied.
func (db *DB) FinishWelcomeEmail(ctx context.Context, id int64, attempt int, state, failure string) (recorded bool, err error) {
	switch state {
	case WelcomeSent, WelcomePending, WelcomeUndeliverable, WelcomeUnknown:
	default:
		return false, fmt.Errorf("finish welcome e-mail %d: invalid outcome %q", id, state)
	}
	res := db.gorm.WithContext(ctx).Exec(`
		UPDATE welcome_emails
		   SET state = ?::text,
		       sent_at = CASE WHEN ?::text = 'sent' THEN now() END,
		       last_error = NULLIF(?, '')
		 WHERE id = ? AND attempts = ? AND state IN ('sending', 'unknown')`,
		state, state, truncateError(failure), id, attempt)
	if res.Error != nil {
		return false, fmt.Errorf("record welcome e-mail %d as %s: %w", id, state, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// FlagStaleWelcomeEmail marks claim number attempt unknown if it is still
// sending after staleAfter (by the database's clock, the one claimed_at was
// set with): the attempt that made it died somewhere between claim and
// outcome. flagged reports whether this call did it.
func (db *DB) FlagStaleWelcomeEmail(ctx context.Context, id int64, attempt int, staleAfter time.Duration) (flagged bool, err error) {
	res := db.gorm.WithContext(ctx).Exec(`
		UPDATE welcome_emails
		   SET state = 'unknown',
		       last_error = 'outcome unknown: the attempt that claimed it at ' || claimed_at || ' never recorded an outcome'
		 WHERE id = ? AND attempts = ? AND state = 'sending'
		   AND claimed_at < now() - ? * interval '1 microsecond'`,
		id, attempt, staleAfter.Microseconds())
	if res.Error != nil {
		return false, fmt.Errorf("flag welcome e-mail %d unknown: %w", id, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// UnknownWelcomeEmails lists the e-mails whose outcome is unknown, oldest
// claim first: they wait for an operator (ResendWelcomeEmail).
func (db *DB) UnknownWelcomeEmails(ctx context.Context) ([]WelcomeEmail, error) {
	var rows []WelcomeEmail
	if err := db.gorm.WithContext(ctx).Raw(welcomeEmailSelect + ` WHERE w.state = 'unknown' ORDER BY w.claimed_at, w.id`).
		Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("list unknown welcome e-mails: %w", err)
	}
	return rows, nil
}

// ResendWelcomeEmail puts an unknown e-mail back to pending: an operator
// decided that it did not arrive (or that a second copy is acceptable). The
// next attempt sends it with the same Message-ID.
func (db *DB) ResendWelcomeEmail(ctx context.Context, id int64) error {
	var changed bool
	err := db.audited(ctx, AuditEmailResend, func(tx *gorm.DB) (string, any, any, error) {
		res := tx.Exec(`UPDATE welcome_emails SET state = 'pending', claimed_at = NULL WHERE id = ? AND state = 'unknown'`, id)
		if res.Error != nil {
			return "", nil, nil, res.Error
		}
		if res.RowsAffected != 1 {
			return "", nil, nil, errNoChange
		}
		changed = true
		return fmt.Sprintf("welcome_email:%d", id), map[string]string{"state": "unknown"}, map[string]string{"state": "pending"}, nil
	})
	if err != nil {
		return fmt.Errorf("resend welcome e-mail %d: %w", id, err)
	}
	if changed {
		return nil
	}
	w, err := db.WelcomeEmail(ctx, id)
	if err != nil {
		return err
	}
	return fmt.Errorf("welcome e-mail %d is %s: %w", id, w.State, ErrWelcomeEmailNotUnknown)
}

// UnsentWelcomeEmails lists up to limit outbox rows, oldest first, that a
// worker should look at: pending rows written more than olderThan ago (their
// job was lost or ran out of retries), and rows claimed more than olderThan
// ago and still sending (their attempt may have died; the handler decides
// whether it is stale and flags it unknown, never sending it again).
func (db *DB) UnsentWelcomeEmails(ctx context.Context, olderThan time.Duration, limit int) ([]int64, error) {
	if limit <= 0 {
		return nil, nil
	}
	var ids []int64
	err := db.gorm.WithContext(ctx).Raw(`
		SELECT id FROM welcome_emails
		 WHERE state IN ('pending', 'sending')
		   AND CASE state WHEN 'pending' THEN created_at ELSE claimed_at END < now() - ? * interval '1 microsecond'
		 ORDER BY created_at, id
		 LIMIT ?`,
		olderThan.Microseconds(), limit).
		Scan(&ids).Error
	if err != nil {
		return nil, fmt.Errorf("list unsent welcome e-mails: %w", err)
	}
	return ids, nil
}

// truncateError makes an SMTP server's error text storable: cleaned and
// bounded by pkg/storable, the one place text from outside is made so.
func truncateError(msg string) string { return storable.Text(msg, welcomeLastErrorMax) }
