package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/hibiken/asynq"

	"github.com/gridshift/dataimport/pkg/email"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
)

// WelcomeStore is what the welcome e-mail handler needs from the database
// (implemented by *postgres.DB).
type WelcomeStore interface {
	WelcomeEmail(ctx context.Context, id int64) (postgres.WelcomeEmail, error)
	ClaimWelcomeEmail(ctx context.Context, id int64, send func(postgres.WelcomeEmail) error) (sent bool, err error)
}

// WelcomeEmailHandler runs queue.TypeWelcomeEmail tasks: it sends one
// customer's welcome e-mail, at most once however often the task runs
// (CONTRACT §6).
type WelcomeEmailHandler struct {
	Store  WelcomeStore
	Sender email.Sender
	Log    *slog.Logger // nil: slog.Default()
}

// ProcessTask sends the e-mail named by the task. An e-mail sent already, by
// this task or a duplicate, succeeds without sending again. A transient
// failure returns the error so asynq retries; a permanent rejection by the
// mail server, a missing row or a bad payload returns an error wrapping
// asynq.SkipRetry (the failure is recorded on the row first).
func (h *WelcomeEmailHandler) ProcessTask(ctx context.Context, t *asynq.Task) error {
	log := h.Log
	if log == nil {
		log = slog.Default()
	}
	var p queue.WelcomeEmail
	if err := queue.Decode(t, &p); err != nil {
		return err
	}
	if p.EmailID <= 0 {
		return fmt.Errorf("%s: invalid email_id %d: %w", queue.TypeWelcomeEmail, p.EmailID, asynq.SkipRetry)
	}
	log = log.With("task", queue.TypeWelcomeEmail, "welcome_email_id", p.EmailID)

	// A cheap look without the row lock: duplicates of a sent e-mail end here.
	w, err := h.Store.WelcomeEmail(ctx, p.EmailID)
	if errors.Is(err, postgres.ErrWelcomeEmailNotFound) {
		log.WarnContext(ctx, "welcome e-mail not found; nothing to send")
		return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
	}
	if err != nil {
		return err
	}
	if w.SentAt != nil {
		log.DebugContext(ctx, "welcome e-mail already sent")
		return nil
	}

	sent, err := h.Store.ClaimWelcomeEmail(ctx, p.EmailID, func(w postgres.WelcomeEmail) error {
		err := h.Sender.Send(ctx, WelcomeMessage(w))
		if errors.Is(err, email.ErrPermanent) {
			return fmt.Errorf("%w: %w", postgres.ErrUndeliverable, err)
		}
		return err
	})
	switch {
	case errors.Is(err, email.ErrPermanent):
		log.WarnContext(ctx, "welcome e-mail rejected by the mail server; giving up", "account_id", w.AccountID, "error", err)
		return fmt.Errorf("welcome e-mail %d: %w: %w", p.EmailID, err, asynq.SkipRetry)
	case errors.Is(err, postgres.ErrWelcomeEmailNotFound):
		log.WarnContext(ctx, "welcome e-mail removed before sending")
		return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
	case err != nil:
		log.InfoContext(ctx, "welcome e-mail not sent; will retry", "account_id", w.AccountID, "error", err)
		return fmt.Errorf("welcome e-mail %d: %w", p.EmailID, err)
	case sent:
		log.InfoContext(ctx, "welcome e-mail sent", "account_id", w.AccountID)
	default:
		log.DebugContext(ctx, "welcome e-mail already sent")
	}
	return nil
}

// WelcomeMessage is the plain-text welcome e-mail for one customer.
func WelcomeMessage(w postgres.WelcomeEmail) email.Message {
	greeting := "Hello,"
	switch given, family, title := strings.TrimSpace(w.GivenName), strings.TrimSpace(w.FamilyName), strings.TrimSpace(w.Title); {
	case given != "":
		greeting = "Hello " + given + ","
	case title != "" && family != "":
		greeting = "Dear " + title + " " + family + ","
	case family != "":
		greeting = "Dear " + family + ","
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\n", greeting)
	fmt.Fprintf(&b, "Welcome to %s, your account %s is ready.\n\n", w.SupplierCode, w.PlatformAccountNumber)
	b.WriteString("Your account has been moved over to us. There is nothing you need to do right now;\n")
	fmt.Fprintf(&b, "please quote your account number %s whenever you get in touch.\n\n", w.PlatformAccountNumber)
	fmt.Fprintf(&b, "Thank you for being with %s.\n", w.SupplierCode)
	return email.Message{
		To:      w.Email,
		Subject: fmt.Sprintf("Welcome to %s, your account %s is ready", w.SupplierCode, w.PlatformAccountNumber),
		Text:    b.String(),
	}
}
