package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/market"
	"github.com/gridshift/dataimport/pkg/payments"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
)

// AccountStore is what account creation needs from Postgres.
type AccountStore interface {
	LoadForCreation(ctx context.Context, processID int64) (postgres.LoadedProcess, error)
	CreateAccount(ctx context.Context, in postgres.CreationInput) (postgres.CreationResult, error)
	// Companions (companions.go).
	AwaitingCreation(ctx context.Context, skip []int64, limit int) ([]int64, error)
	LoadManyForCreation(ctx context.Context, processIDs []int64) (map[int64]postgres.LoadedProcess, error)
	CreateAccounts(ctx context.Context, ins []postgres.CreationInput) ([]postgres.CreationResult, []error)
	FinishAttempt(ctx context.Context, processID int64, attempt int, outcome string, e *dataimport.Error) error
	ClaimStart(ctx context.Context, processID int64, attempt int) (bool, error)
	Caps(ctx context.Context, own queue.Owner) (queue.Caps, error)
	CheckAccountCatalogue(ctx context.Context, sup dataimport.Supplier, a *dataimport.Account) error
	HoldStore
}

// Slots is the cluster-wide concurrency semaphore.
type Slots interface {
	AcquireFor(ctx context.Context, holder string, own queue.Owner, caps queue.Caps) (bool, error)
	Renew(ctx context.Context, holder string) (bool, error)
	Release(ctx context.Context, holder string) error
}

// SlotTracker may be implemented by Slots to learn which slots this
// process's tasks hold while they run: a replica's busy count (pkg/app).
// Holding marks the task's slot as this process's from the moment the
// attempt goes ahead (a v1 attempt's slot was taken by the API); Done ends
// that when the task returns, however it ends.
type SlotTracker interface {
	Holding(holder string)
	Done(holder string)
}

// Publisher wakes API requests waiting on a process.
type Publisher interface {
	Publish(ctx context.Context, processID int64) error
}

// Enqueuer adds follow-up tasks.
type Enqueuer interface {
	Enqueue(ctx context.Context, p queue.Tasker) error
}

// CreateAccountHandler runs one account-creation attempt.
type CreateAccountHandler struct {
	Store   AccountStore
	Slots   Slots
	Notify  Publisher
	Queue   Enqueuer
	Metrics *Metrics
	// Vendors verifies the account's payment instructions before the
	// creation transaction (nil: none configured, so an account naming a
	// vendor fails validation).
	Vendors    payments.Lookup
	Log        *slog.Logger
	Now        func() time.Time
	RenewEvery time.Duration // how often the slot lease is renewed while running
	// Brakes is told of failed creations (nil: no error-rate brake).
	Brakes *Brakes

	together together // companions.go
}

// errInternal is what partners see when an attempt fails for our reasons.
var errInternal = &dataimport.Error{Code: dataimport.CodeServerError,
	Detail: "The account could not be created because of an internal error. Create it again."}

// ProcessTask implements asynq.Handler. It returns an error only for
// failures worth retrying (database or network trouble); every other ending
// is recorded in Postgres, the slot released and waiters woken.
func (h *CreateAccountHandler) ProcessTask(ctx context.Context, t *asynq.Task) error {
	var p queue.CreateAccount
	if err := queue.Decode(t, &p); err != nil {
		return err
	}
	start := time.Now()
	if t, ok := h.Slots.(SlotTracker); ok {
		defer t.Done(p.SlotHolder())
	}
	stopRenewing := h.keepSlot(ctx, p.SlotHolder(), p.Owner())
	leave, err := h.together.enter(ctx, p.ProcessID)
	if err != nil {
		stopRenewing()
		return err
	}
	outcome, supplier, err := h.run(ctx, p)
	leave()
	// Stop renewing before releasing, or a late renewal could take the slot back.
	stopRenewing()
	if errors.Is(err, ErrHeld) {
		// Held while its supplier is Paused: it holds no slot meanwhile.
		if rErr := h.Slots.Release(context.WithoutCancel(ctx), p.SlotHolder()); rErr != nil {
			h.Log.WarnContext(ctx, "slot of a held attempt not released; its lease will expire", "process_id", p.ProcessID, "err", rErr.Error())
		}
		return err
	}
	if errors.Is(err, ErrWaiting) {
		return err
	}
	if err != nil {
		h.Log.WarnContext(ctx, "account creation failed; will retry", "process_id", p.ProcessID, "attempt", p.Attempt, "err", err.Error())
		return err
	}
	if outcome == "" { // stale task: another attempt owns the process and its slot
		return nil
	}
	h.Metrics.observe(supplier, outcome, time.Since(start))
	h.finished(ctx, p)
	if outcome == postgres.OutcomeFailed && !p.DryRun {
		h.Brakes.Check(ctx, p.SupplierID)
	}
	return nil
}

// run returns the outcome ("" for a stale task) or a retryable error.
func (h *CreateAccountHandler) run(ctx context.Context, p queue.CreateAccount) (outcome, supplier string, err error) {
	lp, err := h.Store.LoadForCreation(ctx, p.ProcessID)
	if err != nil {
		return "", "", err
	}
	supplier = lp.Supplier.Code
	proc := lp.Process
	switch {
	case proc.Imported():
		return postgres.OutcomeCompleted, supplier, nil
	case proc.Status != dataimport.StatusInProgress || proc.Attempt != p.Attempt:
		return "", supplier, nil
	case lp.Supplier.Status != dataimport.SupplierOngoing:
		return h.stopped(ctx, lp, p.Attempt)
	}
	now := h.Now().UTC()
	if proc.V2Status == dataimport.V2Pending {
		// Scheduled, not started: it starts inside its window, under the cap.
		outcome, err := h.start(ctx, p, proc, now)
		switch {
		case errors.Is(err, errStale):
			return "", supplier, nil
		case errors.Is(err, postgres.ErrSupplierNotOngoing):
			return h.reloadStopped(ctx, p)
		case outcome != "" || err != nil:
			return outcome, supplier, err
		}
	}
	if t, ok := h.Slots.(SlotTracker); ok {
		t.Holding(p.SlotHolder()) // started: the slot is this attempt's
	}
	// The staged payload is validated again: rules, the supplier's phone
	// region, market or catalogue may have changed since it was staged.
	acc, err := h.revalidate(ctx, lp, now)
	if err != nil {
		e, retry := revalidationFailure(err)
		if retry != nil {
			return "", supplier, retry // the catalogue could not be read: retry
		}
		if err := h.Store.FinishAttempt(ctx, p.ProcessID, p.Attempt, postgres.OutcomeFailed, e); err != nil {
			return "", supplier, err
		}
		return postgres.OutcomeFailed, supplier, nil
	}
	// The vendor is asked before the creation transaction, never inside it.
	instructions, refusal, err := h.verifyInstructions(ctx, acc)
	switch {
	case err != nil:
		h.Log.WarnContext(ctx, "payment vendor did not answer; will retry", "process_id", p.ProcessID, "attempt", p.Attempt, "err", err.Error())
		return "", supplier, err
	case refusal != nil:
		outcome := postgres.OutcomeFailed
		if err := h.Store.FinishAttempt(ctx, p.ProcessID, p.Attempt, outcome, refusal); err != nil {
			return "", supplier, err
		}
		return outcome, supplier, nil
	}
	in := postgres.CreationInput{ProcessID: p.ProcessID, Attempt: p.Attempt, DryRun: p.DryRun,
		Supplier: lp.Supplier, Account: acc, Now: now, Instructions: instructions}
	var res postgres.CreationResult
	if in.DryRun {
		res, err = h.Store.CreateAccount(ctx, in)
	} else {
		res, err = h.createTogether(ctx, in)
	}
	switch {
	case errors.Is(err, postgres.ErrDryRun):
		if err := h.Store.FinishAttempt(ctx, p.ProcessID, p.Attempt, postgres.OutcomeDryRun, nil); err != nil {
			return "", supplier, err
		}
		return postgres.OutcomeDryRun, supplier, nil
	case errors.Is(err, postgres.ErrStaleAttempt):
		return "", supplier, nil
	case errors.Is(err, postgres.ErrSupplierNotOngoing):
		// Paused or set Complete since it was loaded: nothing was created.
		return h.reloadStopped(ctx, p)
	case err != nil:
		return h.refused(ctx, p, supplier, err)
	}
	if !res.AlreadyCreated {
		h.created(ctx, supplier, p.ProcessID, res)
	}
	return postgres.OutcomeCompleted, supplier, nil
}

// created is what follows an account's commit. E-mails are in the outbox;
// a lost enqueue is picked up by the reconciler, so failure here is only
// logged.
func (h *CreateAccountHandler) created(ctx context.Context, supplier string, processID int64, res postgres.CreationResult, attrs ...any) {
	for _, id := range res.WelcomeEmailIDs {
		if err := h.Queue.Enqueue(ctx, queue.WelcomeEmail{EmailID: id}); err != nil {
			h.Log.WarnContext(ctx, "welcome e-mail not enqueued; reconciler will retry", "email_id", id, "err", err.Error())
		}
	}
	h.Log.InfoContext(ctx, "account created", append([]any{"supplier", supplier, "process_id", processID,
		"platform_account_number", res.PlatformAccountNumber}, attrs...)...)
}

// stopped is notOngoing in run's terms ("" outcome for a stale attempt).
func (h *CreateAccountHandler) stopped(ctx context.Context, lp postgres.LoadedProcess, attempt int) (string, string, error) {
	outcome, err := h.notOngoing(ctx, lp, attempt)
	if errors.Is(err, errStale) {
		return "", lp.Supplier.Code, nil
	}
	return outcome, lp.Supplier.Code, err
}

// reloadStopped reads the process and its supplier again after Postgres
// refused to start or create it because the supplier is not Ongoing.
func (h *CreateAccountHandler) reloadStopped(ctx context.Context, p queue.CreateAccount) (string, string, error) {
	lp, err := h.Store.LoadForCreation(ctx, p.ProcessID)
	if err != nil {
		return "", "", err
	}
	return h.stopped(ctx, lp, p.Attempt)
}

// refused ends the attempt as failed when the database refused the data
// itself (SQLSTATE class 22 or 23): retrying unchanged data cannot succeed,
// and would hold the slot for minutes before a 500. Anything else is
// returned for a retry.
func (h *CreateAccountHandler) refused(ctx context.Context, p queue.CreateAccount, supplier string, err error) (string, string, error) {
	e := postgres.DataRefused(err)
	if e == nil {
		return "", supplier, err
	}
	h.Log.WarnContext(ctx, "account data refused by the database; attempt failed", "process_id", p.ProcessID, "attempt", p.Attempt, "err", err.Error())
	if err := h.Store.FinishAttempt(ctx, p.ProcessID, p.Attempt, postgres.OutcomeFailed, e); err != nil {
		return "", supplier, err
	}
	return postgres.OutcomeFailed, supplier, nil
}

// ErrWaiting is returned by a scheduled attempt that cannot start yet (its
// window has not opened, or the cluster-wide cap is full). It is not a
// failure: the task is tried again shortly without using up its retries.
var ErrWaiting = errors.New("waiting for its window or a slot")

// start takes the scheduled attempt's slot and marks it started. It returns
// FAILED when the window has ended first, "" with no error when the attempt
// started (go on and create) or ErrWaiting.
func (h *CreateAccountHandler) start(ctx context.Context, p queue.CreateAccount, proc dataimport.ImportProcess, now time.Time) (string, error) {
	if proc.WindowEnd != nil && now.After(*proc.WindowEnd) {
		if err := h.Store.FinishAttempt(ctx, p.ProcessID, p.Attempt, postgres.OutcomeFailed, dataimport.WindowExpired(*proc.WindowEnd)); err != nil {
			return "", err
		}
		return postgres.OutcomeFailed, nil
	}
	if proc.WindowStart != nil && now.Before(*proc.WindowStart) {
		return "", ErrWaiting
	}
	// Under the global cap and the caps of the supplier and of the
	// organisation that scheduled it.
	own := queue.Owner{Supplier: proc.SupplierID, Organisation: proc.OrganisationID}
	caps, err := h.Store.Caps(ctx, own)
	if err != nil {
		return "", err
	}
	ok, err := h.Slots.AcquireFor(ctx, p.SlotHolder(), own, caps)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", ErrWaiting
	}
	claimed, err := h.Store.ClaimStart(ctx, p.ProcessID, p.Attempt)
	if err != nil || !claimed {
		// Not started: cancelled, replaced or expired meanwhile, or its
		// supplier paused (the caller holds it). The slot is this attempt's
		// own, so giving it back frees nobody else's.
		_ = h.Slots.Release(context.WithoutCancel(ctx), p.SlotHolder())
		if err == nil {
			err = errStale
		}
		return "", err
	}
	return "", nil
}

// errStale ends a task whose attempt is no longer current.
var errStale = errors.New("attempt no longer current")

// GiveUp ends an attempt whose retries are exhausted: the process goes back
// to UNKNOWN with the error kept, so partners can see it and try again.
func (h *CreateAccountHandler) GiveUp(ctx context.Context, t *asynq.Task, cause error) {
	var p queue.CreateAccount
	if queue.Decode(t, &p) != nil {
		return
	}
	h.Log.ErrorContext(ctx, "account creation gave up", "process_id", p.ProcessID, "attempt", p.Attempt, "err", cause.Error())
	if err := h.Store.FinishAttempt(ctx, p.ProcessID, p.Attempt, postgres.OutcomeFailed, errInternal); err != nil {
		h.Log.ErrorContext(ctx, "could not record failed attempt; reconciler will retry", "process_id", p.ProcessID, "err", err.Error())
		return
	}
	h.Metrics.observe("", postgres.OutcomeFailed, 0)
	h.finished(ctx, p)
}

func (h *CreateAccountHandler) finished(ctx context.Context, p queue.CreateAccount) {
	if err := h.Slots.Release(ctx, p.SlotHolder()); err != nil {
		h.Log.WarnContext(ctx, "slot not released; its lease will expire", "process_id", p.ProcessID, "err", err.Error())
	}
	if err := h.Notify.Publish(ctx, p.ProcessID); err != nil {
		h.Log.WarnContext(ctx, "outcome not published; waiters poll", "process_id", p.ProcessID, "err", err.Error())
	}
}

// keepSlot renews the account's concurrency lease while the job runs. If the
// slot vanished (Redis restarted or flushed), it is recorded again so the
// count of accounts in progress stays true. The returned stop waits for the
// renewing goroutine to end.
func (h *CreateAccountHandler) keepSlot(ctx context.Context, holder string, own queue.Owner) func() {
	every := h.RenewEvery
	if every <= 0 {
		every = 10 * time.Second
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The API took the slot a moment ago, so the first renewal waits a
		// period: one Redis round trip fewer per account.
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if ok, err := h.Slots.Renew(ctx, holder); err == nil && !ok {
				_, _ = h.Slots.AcquireFor(ctx, holder, own, queue.Caps{})
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// String is for logs.
func (h *CreateAccountHandler) String() string {
	return fmt.Sprintf("%s handler", queue.TypeCreateAccount)
}

// errUnknownMarket: the supplier names a market this build does not know.
var errUnknownMarket = errors.New("unknown market")

// revalidate runs the same rules as validate and stage: pure validation
// with the supplier's phone region and market, then the catalogue check.
func (h *CreateAccountHandler) revalidate(ctx context.Context, lp postgres.LoadedProcess, now time.Time) (*dataimport.Account, error) {
	return revalidate(ctx, h.Store, h.Vendors, lp, now)
}

// revalidationFailure sorts an error of revalidate: the attempt's error
// (domain validation; an unknown market is an internal error) when the
// staged data fails, else retry, the error to retry the job with (the
// catalogue could not be read).
func revalidationFailure(err error) (attempt *dataimport.Error, retry error) {
	e, ok := dataimport.AsError(err)
	switch {
	case ok:
		v := *e
		v.Domain = dataimport.DomainValidation
		return &v, nil
	case errors.Is(err, errUnknownMarket):
		return errInternal, nil
	default:
		return nil, err
	}
}

// Catalogue checks an account against the product catalogue.
type Catalogue interface {
	CheckAccountCatalogue(ctx context.Context, sup dataimport.Supplier, a *dataimport.Account) error
}

// revalidate is the creation-time validation of a staged payload, shared by
// the per-account task and bulk jobs.
func revalidate(ctx context.Context, cat Catalogue, lookup payments.Lookup, lp postgres.LoadedProcess, now time.Time) (*dataimport.Account, error) {
	m, err := market.For(lp.Supplier.Market)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUnknownMarket, err)
	}
	var vendors []string
	if lookup != nil {
		vendors = lookup.Names()
	}
	acc, err := dataimport.DecodeAccount(lp.Payload, dataimport.AccountRules{PhoneRegion: lp.Supplier.PhoneRegion, Today: dataimport.DateOf(now),
		Market: m, PaymentVendors: vendors})
	if err != nil {
		return nil, err
	}
	if err := cat.CheckAccountCatalogue(ctx, lp.Supplier, acc); err != nil {
		return nil, err
	}
	return acc, nil
}

// verifyInstructions asks the vendor about each of the account's payment
// instructions, with no transaction open, and returns them with the
// vendor's details for the creation transaction to store. It is read-only
// at the vendor, so a retried or killed job, or a dry run, simply asks
// again. A final refusal (not found, rejected, vendor unusable: the
// post-import endpoint's codes) is returned as the attempt's error, domain
// "vendor", with the instruction's attr; a transient failure after
// payments.Resilient's own retries is err, for the job to be retried.
func (h *CreateAccountHandler) verifyInstructions(ctx context.Context, acc *dataimport.Account) ([]dataimport.PaymentInstruction, *dataimport.Error, error) {
	return verifyInstructions(ctx, h.Vendors, h.Log, acc)
}

// verifyInstructions is the check of CreateAccountHandler.verifyInstructions,
// shared with bulk jobs.
func verifyInstructions(ctx context.Context, vendors payments.Lookup, log *slog.Logger, acc *dataimport.Account) ([]dataimport.PaymentInstruction, *dataimport.Error, error) {
	var out []dataimport.PaymentInstruction
	for i, p := range acc.PaymentInstructions {
		pi, err := payments.VerifyInstruction(ctx, vendors, p.Instruction())
		if err == nil {
			out = append(out, pi)
			continue
		}
		r := payments.Refusal(err)
		if r == nil {
			return nil, nil, err
		}
		log.WarnContext(ctx, "payment instruction refused by the vendor; attempt failed", "vendor", p.Vendor, "reference", p.Reference, "err", err.Error())
		reason := r.Detail
		if r.Code == dataimport.CodePaymentVendorUnavailable {
			reason = fmt.Sprintf("the payment vendor cannot be used at the moment (%v); create the account again later", r.Extra["error_detail"])
		}
		return nil, &dataimport.Error{Code: r.Code, Domain: dataimport.DomainVendor,
			Detail: fmt.Sprintf("Payment instruction %s %s %s was not accepted by the vendor: %s", p.Vendor, p.Type, p.Reference, reason),
			Errors: []dataimport.FieldError{{Attr: fmt.Sprintf("payment_instructions.%d.reference", i), Code: r.Code, Detail: reason}}}, nil
	}
	return out, nil, nil
}
