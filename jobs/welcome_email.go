package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/gridshift/dataimport/pkg/email"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
)

// WelcomeStore is what the welcome e-mail handler needs from the database
// (implemented by *postgres.DB). Each call is its own short transaction.
type WelcomeStore interface {
	ClaimWelcomeEmail(ctx context.Context, id int64) (w postgres.WelcomeEmail, claimed bool, err error)
	FinishWelcomeEmail(ctx context.Context, id int64, attempt int, state, failure string) (recorded bool, err error)
	FlagStaleWelcomeEmail(ctx context.Context, id int64, attempt int, staleAfter time.Duration) (flagged bool, err error)
}

// DefaultWelcomeClaimStale is how long a claimed e-mail may stay `sending`
// before the attempt that claimed it counts as dead. A live attempt records
// its outcome well within it: the SMTP exchange is bounded by email.Timeout
// and the bookkeeping by welcomeRecordTries.
const DefaultWelcomeClaimStale = time.Minute

// welcomePoll is how often an attempt that finds another one's fresh claim
// looks again.
const welcomePoll = 200 * time.Millisecond

// welcomeRecordTries and welcomeRecordTimeout bound recording an outcome: a
// database blip right after the SMTP exchange should not turn a known
// outcome into an unknown one.
const (
	welcomeRecordTries   = 3
	welcomeRecordTimeout = 5 * time.Second
)

// WelcomeEmailHandler runs queue.TypeWelcomeEmail tasks: it sends one
// customer's welcome e-mail at most once however often the task runs
// (CONTRACT §6; README "Welcome e-mails: at most once"). Record, then send:
// the row is claimed (pending → sending) in its own transaction, the SMTP
// exchange runs with no transaction open, and its outcome is recorded in
// another. Only the claim allows a send, so a task retried after a crash, a
// lost commit or a duplicate never sends again; an e-mail whose attempt was
// interrupted after its claim becomes `unknown` and waits for an operator.
type WelcomeEmailHandler struct {
	Store   WelcomeStore
	Sender  email.Sender
	Metrics *WelcomeMetrics // nil: not counted
	Log     *slog.Logger    // nil: slog.Default()
	// ClaimStale overrides DefaultWelcomeClaimStale (tests).
	ClaimStale time.Duration
}

// ProcessTask sends the e-mail named by the task if it is still pending. An
// e-mail sent already, given up on, or of unknown outcome succeeds without
// sending. One claimed by another attempt is waited for until that attempt
// records its outcome, or until the claim is stale, when it is flagged
// unknown. A send that definitely did not deliver (connection refused, a
// 4xx reply before or to the message) puts the row back to pending and
// returns the error so asynq retries; a permanent refusal, a missing row or
// a bad payload returns an error wrapping asynq.SkipRetry.
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
	stale := h.ClaimStale
	if stale <= 0 {
		stale = DefaultWelcomeClaimStale
	}
	for {
		claimStart := time.Now()
		w, claimed, err := h.Store.ClaimWelcomeEmail(ctx, p.EmailID)
		if errors.Is(err, postgres.ErrWelcomeEmailNotFound) {
			log.WarnContext(ctx, "welcome e-mail not found; nothing to send")
			return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
		}
		if err != nil {
			return err
		}
		if claimed {
			// An attempt stalled after its claim (a frozen process) must
			// not start talking SMTP once others may take the claim for
			// dead; half the stale time leaves the exchange room to end.
			sendCtx, cancel := context.WithDeadline(ctx, claimStart.Add(stale/2))
			defer cancel()
			return h.send(sendCtx, log, w)
		}
		switch w.State {
		case postgres.WelcomeSent:
			log.DebugContext(ctx, "welcome e-mail already sent")
			return nil
		case postgres.WelcomeUndeliverable:
			log.DebugContext(ctx, "welcome e-mail given up on earlier")
			return nil
		case postgres.WelcomeUnknown:
			log.InfoContext(ctx, "welcome e-mail outcome unknown; not sent again, an operator decides (importctl email unknown)")
			return nil
		case postgres.WelcomeSending:
			flagged, err := h.Store.FlagStaleWelcomeEmail(ctx, w.ID, w.Attempts, stale)
			if err != nil {
				return err
			}
			if flagged {
				h.Metrics.observe(welcomeUnknown)
				log.ErrorContext(ctx, "welcome e-mail attempt interrupted after its claim: it may have been sent; not sending again, an operator decides (importctl email unknown)",
					"account_id", w.AccountID, "attempt", w.Attempts, "message_id", w.MessageID)
				return nil
			}
		}
		// Another attempt is sending it (wait for its outcome), or released
		// it between our claim and our read: look again shortly.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(welcomePoll):
		}
	}
}

// send delivers the claimed e-mail w and records the outcome.
func (h *WelcomeEmailHandler) send(ctx context.Context, log *slog.Logger, w postgres.WelcomeEmail) error {
	sendErr := h.Sender.Send(ctx, WelcomeMessage(w))
	state, outcome, failure := postgres.WelcomeSent, welcomeSent, ""
	switch {
	case sendErr == nil:
	case errors.Is(sendErr, email.ErrOutcomeUnknown):
		state, outcome = postgres.WelcomeUnknown, welcomeUnknown
	case errors.Is(sendErr, email.ErrPermanent):
		state, outcome = postgres.WelcomeUndeliverable, welcomeUndeliverable
	default:
		state, outcome = postgres.WelcomePending, welcomeRetry
	}
	if sendErr != nil {
		failure = sendErr.Error()
	}
	h.Metrics.observe(outcome)
	log = log.With("account_id", w.AccountID, "attempt", w.Attempts, "message_id", w.MessageID)

	recorded, err := h.record(ctx, w, state, failure)
	switch {
	case err != nil:
		// The row stays sending: a later attempt flags it unknown once the
		// claim is stale, and never sends it again.
		log.ErrorContext(ctx, "welcome e-mail outcome not recorded", "outcome", state, "send_error", failure, "error", err)
		return fmt.Errorf("welcome e-mail %d: record %s: %w", w.ID, state, err)
	case !recorded:
		log.WarnContext(ctx, "welcome e-mail outcome not recorded: the claim was superseded", "outcome", state, "send_error", failure)
	}
	switch state {
	case postgres.WelcomeSent:
		log.InfoContext(ctx, "welcome e-mail sent")
		return nil
	case postgres.WelcomeUnknown:
		log.ErrorContext(ctx, "welcome e-mail may or may not have been delivered: not sending again, an operator decides (importctl email unknown)", "error", sendErr)
		return nil
	case postgres.WelcomeUndeliverable:
		log.WarnContext(ctx, "welcome e-mail rejected by the mail server; giving up", "error", sendErr)
		return fmt.Errorf("welcome e-mail %d: %w: %w", w.ID, sendErr, asynq.SkipRetry)
	default:
		log.InfoContext(ctx, "welcome e-mail not delivered; will retry", "error", sendErr)
		return fmt.Errorf("welcome e-mail %d: %w", w.ID, sendErr)
	}
}

// record stores the outcome of w's claim, on a context detached from ctx (a
// worker shutting down mid-send still records what happened), with a few
// tries.
func (h *WelcomeEmailHandler) record(ctx context.Context, w postgres.WelcomeEmail, state, failure string) (bool, error) {
	var err error
	for try := range welcomeRecordTries {
		if try > 0 {
			time.Sleep(time.Duration(try*try) * 200 * time.Millisecond)
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), welcomeRecordTimeout)
		var recorded bool
		recorded, err = h.Store.FinishWelcomeEmail(rctx, w.ID, w.Attempts, state, failure)
		cancel()
		if err == nil {
			return recorded, nil
		}
	}
	return false, err
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
		MessageID: w.MessageID,
		To:        w.Email,
		Subject:   fmt.Sprintf("Welcome to %s, your account %s is ready", w.SupplierCode, w.PlatformAccountNumber),
		Text:      b.String(),
	}
}
