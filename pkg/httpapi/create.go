package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
)

// Creator is what the create-account endpoint needs beyond the Store: the
// queue, the cluster-wide semaphore and the outcome notifier.
type Creator interface {
	Enqueue(ctx context.Context, p queue.Tasker) error
	AcquireFor(ctx context.Context, holder string, own queue.Owner, caps queue.Caps) (bool, error)
	Release(ctx context.Context, holder string) error
	Watch(processID int64) (<-chan struct{}, func())
}

// retryAfterLimit is the Retry-After of a 429 from the concurrency limit.
const retryAfterLimit = 2

// createRequest is the create-account body (interface 4.1).
type createRequest struct {
	ExternalAccountNumber string `json:"external_account_number" dataimport:"required"`
	ImportSupplierCode    string `json:"import_supplier_code" dataimport:"required"`
	OperationsTeamName    string `json:"operations_team_name" dataimport:"required"`
	DryRun                *bool  `json:"dry_run,omitempty"`
}

func (r *createRequest) validate() []dataimport.FieldError {
	var errs []dataimport.FieldError
	for attr, v := range map[string]string{"external_account_number": r.ExternalAccountNumber,
		"import_supplier_code": r.ImportSupplierCode, "operations_team_name": r.OperationsTeamName} {
		if strings.TrimSpace(v) == "" {
			errs = append(errs, dataimport.FieldError{Attr: attr, Code: dataimport.CodeBlank, Detail: "This field may not be blank."})
		}
	}
	return errs
}

// createAccount serves POST /account-import-process/process/ with the
// checks and order of CONTRACT §6. It starts (or joins) the account's one
// creation attempt and waits up to PROCESS_WAIT for it.
func (s *Server) createAccount(c *gin.Context) {
	ctx := c.Request.Context()
	req, err := dataimport.Decode(requestBody(c), dataimport.CodeInvalidPayload, "The request body is invalid.", (*createRequest).validate)
	if err != nil {
		abortWithError(c, err)
		return
	}
	sup, err := s.deps.Store.SupplierForOrganisation(ctx, principal(c).OrganisationID, req.ImportSupplierCode)
	if err != nil {
		abortWithError(c, err)
		return
	}
	if !sup.AcceptsAccounts() {
		renderError(c, sup.NotOngoingError())
		return
	}
	proc, err := s.deps.Store.Process(ctx, sup.ID, req.ExternalAccountNumber)
	if errors.Is(err, postgres.ErrProcessNotFound) || (err == nil && proc.StagedVersion == 0 && !proc.Imported()) {
		renderError(c, dataimport.Errorf(dataimport.CodeProcessDoesNotExist, "No staged data for account %s; stage it first.", req.ExternalAccountNumber))
		return
	}
	if err != nil {
		abortWithError(c, err)
		return
	}
	if err := refuseCreate(proc); err != nil {
		abortWithError(c, err)
		return
	}
	team, err := s.deps.Store.TeamByName(ctx, req.OperationsTeamName)
	if err != nil {
		abortWithError(c, err)
		return
	}
	dryRun := req.DryRun != nil && *req.DryRun
	// Watch before starting, so that even a job that finishes at once wakes us.
	wake, stop := s.deps.Creator.Watch(proc.ID)
	defer stop()
	attempt, started := proc.Attempt, false
	if proc.Status == dataimport.StatusInProgress {
		if err := joinable(proc, dryRun); err != nil {
			abortWithError(c, err)
			return
		}
	} else {
		var ok bool
		if attempt, started, ok = s.startAttempt(c, sup, proc, team.ID, dryRun); !ok {
			return
		}
	}
	s.awaitOutcome(c, sup, proc, attempt, wake, started)
}

// joinable refuses to join a running attempt whose dry-run flag differs from
// the request's: a real create must not be answered by a dry run's rollback,
// nor a dry run by a real account.
func joinable(running dataimport.ImportProcess, dryRun bool) error {
	if running.DryRun == dryRun {
		return nil
	}
	kind := "a real creation"
	if running.DryRun {
		kind = "a dry run"
	}
	return dataimport.Errorf(dataimport.CodeImportInProgress,
		"Account %s is being processed by %s; send this request again when it has finished.", running.ExternalAccountNumber, kind)
}

func refuseCreate(p dataimport.ImportProcess) error {
	switch {
	case p.Imported():
		return dataimport.AlreadyImported(p.ExternalAccountNumber, p.PlatformAccountNumber)
	case p.Skipped:
		return dataimport.Errorf(dataimport.CodeAccountMarkedSkipped, "Account %s is marked to be skipped.", p.ExternalAccountNumber)
	}
	return nil
}

// startAttempt takes the next attempt's concurrency slot, moves the process
// to IN_PROGRESS as that attempt and enqueues its job. Racing requests for
// one account name the same attempt, so they share one slot, and the
// conditional update lets exactly one of them start it; the others join it.
// A slot whose attempt did not start is released here and now: the slot
// belongs to that attempt alone, so releasing it can never free another's.
// It returns the attempt to wait for and whether this request started it.
func (s *Server) startAttempt(c *gin.Context, sup dataimport.Supplier, proc dataimport.ImportProcess, teamID int64, dryRun bool) (attempt int, started, ok bool) {
	ctx := c.Request.Context()
	// The slot counts against the global cap, the supplier's and the
	// requesting organisation's (all checked in one step).
	own := queue.Owner{Supplier: sup.ID, Organisation: principal(c).OrganisationID}
	caps, err := s.deps.Store.Caps(ctx, own)
	if err != nil {
		abortWithError(c, err)
		return 0, false, false
	}
	next := proc.Attempt + 1
	holder := queue.SlotHolder(proc.ID, next)
	ok, err = s.deps.Creator.AcquireFor(ctx, holder, own, caps)
	if err != nil {
		abortWithError(c, err)
		return 0, false, false
	}
	if !ok {
		// Slots free as soon as jobs finish (typically well under a
		// second), so a short, fixed hint beats the worst-case lease.
		s.metrics.throttled.Inc()
		renderError(c, &dataimport.Error{Code: dataimport.CodeConcurrencyLimitExceeded, RetryAfterSeconds: retryAfterLimit,
			Detail: "Too many accounts are being created at once. Retry after other accounts finish processing."})
		return 0, false, false
	}
	// Whatever happens from here on a request that returns without its
	// attempt running gives the slot back (even if the caller hung up).
	release := func() { _ = s.deps.Creator.Release(context.WithoutCancel(ctx), holder) }
	attempt, started, err = s.deps.Store.StartAttempt(ctx, proc.ID, proc.Attempt, teamID, own.Organisation, dryRun)
	if err != nil {
		release()
		abortWithError(c, err)
		return 0, false, false
	}
	if !started {
		return s.joinAttempt(c, sup, proc, next, dryRun, release)
	}
	task := queue.CreateAccount{ProcessID: proc.ID, SupplierID: sup.ID, ExternalAccountNumber: proc.ExternalAccountNumber, Attempt: attempt, DryRun: dryRun,
		OrganisationID: own.Organisation}
	if err := s.deps.Creator.Enqueue(ctx, task); err != nil {
		// Put things back so that the partner can simply retry.
		_ = s.deps.Store.AbandonAttempt(context.WithoutCancel(ctx), proc.ID, attempt)
		release()
		abortWithError(c, err)
		return 0, false, false
	}
	return attempt, true, true
}

// joinAttempt handles a start that another request won (or a state change
// that got in first): it joins the attempt running now if it may, answers
// from an attempt that already ended, and otherwise refuses; the slot taken
// for the attempt `next` is kept only when that attempt is running.
func (s *Server) joinAttempt(c *gin.Context, sup dataimport.Supplier, proc dataimport.ImportProcess, next int, dryRun bool, release func()) (attempt int, started, ok bool) {
	cur, err := s.deps.Store.Process(c.Request.Context(), sup.ID, proc.ExternalAccountNumber)
	if err != nil {
		release()
		abortWithError(c, err)
		return 0, false, false
	}
	running := cur.Status == dataimport.StatusInProgress
	if !running || cur.Attempt != next {
		release()
	}
	if err := refuseCreate(cur); err != nil {
		abortWithError(c, err)
		return 0, false, false
	}
	switch {
	case running:
		if err := joinable(cur, dryRun); err != nil {
			abortWithError(c, err)
			return 0, false, false
		}
		return cur.Attempt, false, true
	case cur.Attempt > proc.Attempt:
		// An attempt started and ended while we looked: its outcome is the answer.
		return cur.Attempt, false, true
	}
	// Nothing started (the process changed under us in a way that allows
	// no attempt now); the partner may simply send the request again.
	renderError(c, &dataimport.Error{Code: dataimport.CodeServiceUnavailable, RetryAfterSeconds: 1,
		Detail: "The account changed while this request was being handled. Send it again."})
	return 0, false, false
}

// awaitOutcome waits for the attempt's recorded outcome: woken by the
// notifier, and polling Postgres as a fallback in case a signal is lost. An
// attempt this request just started cannot have ended yet, so the first look
// waits for a signal.
func (s *Server) awaitOutcome(c *gin.Context, sup dataimport.Supplier, proc dataimport.ImportProcess, attempt int, wake <-chan struct{}, fresh bool) {
	ctx := c.Request.Context()
	if strings.Contains(strings.ToLower(c.GetHeader("Prefer")), "respond-async") {
		s.accepted(c, sup, proc)
		return
	}
	deadline := time.NewTimer(s.cfg.ProcessWait)
	defer deadline.Stop()
	poll := time.NewTicker(time.Second)
	defer poll.Stop()
	for look := !fresh; ; look = true {
		if look {
			o, err := s.deps.Store.Outcome(ctx, proc.ID, attempt)
			if err == nil {
				s.respondOutcome(c, proc, o)
				return
			}
			if !errors.Is(err, postgres.ErrAttemptRunning) {
				abortWithError(c, err)
				return
			}
		}
		select {
		case <-wake:
		case <-poll.C:
		case <-deadline.C:
			s.accepted(c, sup, proc)
			return
		case <-ctx.Done():
			return // the caller left; the job goes on
		}
	}
}

func (s *Server) respondOutcome(c *gin.Context, proc dataimport.ImportProcess, o postgres.AttemptOutcome) {
	switch o.Outcome {
	case postgres.OutcomeCompleted:
		c.JSON(http.StatusCreated, gin.H{"platform_account_number": o.PlatformAccountNumber, "external_account_number": proc.ExternalAccountNumber})
	case postgres.OutcomeDryRun:
		renderError(c, dataimport.Errorf(dataimport.CodeDryRunRolledBack, "Account would import successfully. Rolled back due to dry run."))
	default:
		e := o.Error
		if e == nil {
			e = dataimport.Errorf(dataimport.CodeServerError, "The account could not be created. Create it again.")
		}
		// A server_error (our failure, not the data) renders as 500: retry as is.
		renderError(c, e)
	}
}

func (s *Server) accepted(c *gin.Context, sup dataimport.Supplier, proc dataimport.ImportProcess) {
	statusURL := v1StatusURL(sup.Code, proc.ExternalAccountNumber)
	c.Header("Location", statusURL)
	c.Header("Retry-After", strconv.Itoa(2))
	c.JSON(http.StatusAccepted, gin.H{"status": dataimport.StatusInProgress, "status_url": statusURL})
}
