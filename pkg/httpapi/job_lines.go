package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
)

// POST /jobs/<id>/lines/ (CONTRACT §13): corrected accounts for a job's
// invalid or failed lines. The body is an upload's (NDJSON, gzip, the same
// bounds, slots and validation: uploadHeaders, jobBody, uploadLines); each
// valid corrected account replaces the outcome of the job's line with its
// external_account_number when that line is invalid or failed, and the job
// processes it again. Every other line is answered and changes nothing.

// maxRerunRefused bounds the refused lines listed in the answer (all are counted).
const maxRerunRefused = 1000

// rerunLine is a refused line of a re-run, as answered.
type rerunLine struct {
	Line                  int64                   `json:"line"`
	ExternalAccountNumber string                  `json:"external_account_number"`
	Outcome               string                  `json:"outcome"`
	JobLine               *int64                  `json:"job_line"`
	JobLineOutcome        *string                 `json:"job_line_outcome"`
	Errors                []dataimport.FieldError `json:"errors"`
	Code                  string                  `json:"code,omitempty"`
	Detail                string                  `json:"detail,omitempty"`
}

// rerunSummary is what a re-run did, line by line counted.
type rerunSummary struct {
	Received         int64       `json:"received"`
	Accepted         int64       `json:"accepted"`
	Invalid          int64       `json:"invalid"`
	NotInJob         int64       `json:"not_in_job"`
	NotRetryable     int64       `json:"not_retryable"`
	AlreadyImported  int64       `json:"already_imported"`
	DuplicateLine    int64       `json:"duplicate_line"`
	Refused          []rerunLine `json:"refused"`
	RefusedTruncated bool        `json:"refused_truncated"`
}

// jobLinesBody is the answer: the job, and what the re-run did.
type jobLinesBody struct {
	jobBody
	Rerun rerunSummary `json:"rerun"`
}

// postJobLines serves POST /jobs/<id>/lines/.
func (s *Server) postJobLines(c *gin.Context) {
	id, ok := s.jobParam(c)
	if !ok || !s.uploadHeaders(c) {
		return
	}
	var errs []dataimport.FieldError
	for k := range c.Request.URL.Query() {
		errs = append(errs, dataimport.FieldError{Attr: k, Code: dataimport.CodeUnknownField, Detail: "Unknown query parameter."})
	}
	if len(errs) > 0 {
		failValidation(c, dataimport.CodeInvalidPayload, "Invalid query parameters.", errs)
		return
	}
	ctx := c.Request.Context()
	org := principal(c).OrganisationID
	v, err := s.deps.Jobs.Job(ctx, org, id)
	if err != nil {
		abortWithError(c, err)
		return
	}
	key, ok := uploadKey(c)
	if !ok {
		return
	}
	release, ok := s.takeUploadSlots(c, org)
	if !ok {
		return
	}
	defer release()
	// The key first: a retry is replayed even if the job or its supplier
	// has moved on since.
	var claim *streamedClaim
	if key != "" && s.deps.Idempotency != nil {
		if claim, ok = s.claimStreamedKey(c, key); !ok {
			return
		}
		defer claim.settle(c)
	}
	if !dataimport.JobRerunnable(v.State) {
		renderError(c, dataimport.JobNotRerunnable(v.State))
		return
	}
	sup, mkt, ok := s.acceptingSupplier(c, org, v.SupplierCode)
	if !ok {
		return
	}
	body, digest, sum, ok := s.rerun(c, id, sup, mkt, key != "")
	if !ok {
		return
	}
	b, err := json.Marshal(jobLinesBody{jobBody: newJobBody(body), Rerun: sum})
	if err != nil {
		abortWithError(c, err)
		return
	}
	c.Header("Location", jobURL(id))
	c.Data(http.StatusAccepted, "application/json; charset=utf-8", b)
	if claim != nil {
		claim.answer = &postgres.StoredResponse{Status: http.StatusAccepted, Body: b,
			Header: http.Header{"Content-Type": {"application/json; charset=utf-8"}, "Location": {jobURL(id)}}}
		claim.digest = digest
	}
}

// rerun reads the body into the job's corrections and applies them; false
// means the refusal is rendered.
func (s *Server) rerun(c *gin.Context, jobID int64, sup dataimport.Supplier, mkt dataimport.Market, keyed bool) (postgres.JobView, []byte, rerunSummary, bool) {
	ctx := c.Request.Context()
	var sum rerunSummary
	ub, bad := s.jobBody(c, keyed)
	if bad != nil {
		renderError(c, bad)
		return postgres.JobView{}, nil, sum, false
	}
	defer ub.close()
	h := sha256.New()
	body := io.TeeReader(ub.plain, h)
	rerunID := uuid.NewString()
	var invalid []rerunLine
	err := s.deps.Jobs.ReceiveJobCorrections(ctx, jobID, rerunID, func(emit func(postgres.JobCorrection) error) error {
		return s.uploadLines(ctx, body, sup, mkt, false, func(jl postgres.JobLine) error {
			sum.Received++
			if jl.Err == nil {
				return emit(postgres.JobCorrection{Line: jl.Line, External: jl.External, Payload: jl.Payload})
			}
			sum.Invalid++
			if len(invalid) < maxRerunRefused {
				l := rerunLine{Line: int64(jl.Line), ExternalAccountNumber: jl.External, Outcome: dataimport.RerunInvalid,
					Errors: jl.Err.Errors, Code: jl.Err.Code, Detail: jl.Err.Detail}
				if l.Errors == nil {
					l.Errors = []dataimport.FieldError{}
				}
				invalid = append(invalid, l)
			}
			return nil
		})
	})
	if err != nil {
		if e := s.uploadBodyFailure(ctx, ub, err, keyed); e != nil {
			renderError(c, e)
		} else {
			abortWithError(c, err)
		}
		return postgres.JobView{}, nil, sum, false
	}
	res, err := s.deps.Jobs.ApplyJobCorrections(ctx, principal(c).OrganisationID, jobID, rerunID, maxRerunRefused)
	if err != nil {
		abortWithError(c, err)
		return postgres.JobView{}, nil, sum, false
	}
	if res.Reopened {
		if err := s.deps.Creator.Enqueue(ctx, queue.BulkJob{JobID: jobID, Epoch: res.Epoch}); err != nil {
			// The job is PROCESSING and nobody holds it: the reconciler wakes it.
			logger(c).WarnContext(ctx, "bulk job task not enqueued; the reconciler will", "job_id", jobID, "err", err.Error())
		}
	}
	sum.Accepted = res.Counts[dataimport.RerunAccepted]
	sum.NotInJob = res.Counts[dataimport.RerunNotInJob]
	sum.NotRetryable = res.Counts[dataimport.RerunNotRetryable]
	sum.AlreadyImported = res.Counts[dataimport.RerunAlreadyImported]
	sum.DuplicateLine = res.Counts[dataimport.RerunDuplicateLine]
	refused := append([]rerunLine{}, invalid...)
	for _, r := range res.Refused {
		l := rerunLine{Line: r.Line, ExternalAccountNumber: r.External, Outcome: r.Answer, JobLine: r.JobLine, Errors: []dataimport.FieldError{}}
		if r.JobLine != nil {
			l.JobLineOutcome = &r.Outcome
		}
		refused = append(refused, l)
	}
	slices.SortFunc(refused, func(a, b rerunLine) int { return int(a.Line - b.Line) })
	n := sum.Invalid + sum.NotInJob + sum.NotRetryable + sum.AlreadyImported + sum.DuplicateLine
	sum.Refused = refused[:min(len(refused), maxRerunRefused)]
	sum.RefusedTruncated = int64(len(sum.Refused)) < n
	return res.Job, h.Sum(nil), sum, true
}

// streamedClaim is an Idempotency-Key claimed by a request whose body
// streams: its answer is stored with the body's digest once known.
type streamedClaim struct {
	store  IdempotencyStore
	req    postgres.IdempotencyRequest
	id     string
	answer *postgres.StoredResponse // set once the request succeeded
	digest []byte
}

// claimStreamedKey claims key for this request, or answers a retry as a
// job upload's retry is answered: another method or path 422; the first
// request still running 409; complete, its body is read through and
// compared: the same body is replayed, another one 422. Only an accepted
// re-run is stored: a refusal changed nothing, and a retry runs again.
func (s *Server) claimStreamedKey(c *gin.Context, key string) (*streamedClaim, bool) {
	ttl := s.idempotencyTTL()
	lease := max(minIdempotencyLease, 2*s.cfg.ProcessWait)
	store := s.deps.Idempotency
	req := postgres.IdempotencyRequest{OrganisationID: principal(c).OrganisationID, Key: key,
		Method: c.Request.Method, Path: c.Request.URL.RequestURI(), BodySHA256: postgres.StreamedBody}
	claim, err := store.ClaimIdempotencyKey(c.Request.Context(), req, ttl, lease)
	if err != nil {
		abortWithError(c, err)
		return nil, false
	}
	if claim.Claimed {
		return &streamedClaim{store: store, req: req, id: claim.ClaimID}, true
	}
	reused := dataimport.Errorf(dataimport.CodeIdempotencyKeyReused,
		"This Idempotency-Key was used with another request (method, path or body); use a new key for a new request.")
	switch {
	case claim.Method != req.Method || claim.Path != req.Path:
		renderError(c, reused)
	case !claim.Complete:
		renderError(c, &dataimport.Error{Code: dataimport.CodeIdempotencyKeyInUse, RetryAfterSeconds: 1,
			Detail: "A request with this Idempotency-Key is still running; retry once it has finished."})
	default:
		sum, bad := s.bodyDigest(c)
		switch {
		case bad != nil:
			renderError(c, bad)
		case !bytes.Equal(sum, claim.BodySHA256):
			renderError(c, reused)
		default:
			replay(c, claim.Response)
		}
	}
	return nil, false
}

// settle stores the answer, or drops the claim so that a retry runs again.
func (k *streamedClaim) settle(c *gin.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request.Context()), settleTimeout)
	defer cancel()
	if k.answer != nil {
		kept, err := k.store.CompleteStreamedIdempotencyKey(ctx, k.req.OrganisationID, k.req.Key, k.id, k.digest, *k.answer)
		if err == nil {
			if !kept {
				logger(c).WarnContext(ctx, "idempotency key claim lost before its answer was stored")
			}
			return
		}
		logger(c).ErrorContext(ctx, "storing the answer of an idempotency key failed; dropping the claim", "err", err.Error())
	}
	if err := k.store.ReleaseIdempotencyKey(ctx, k.req.OrganisationID, k.req.Key, k.id); err != nil && !errors.Is(err, context.Canceled) {
		logger(c).ErrorContext(ctx, "releasing an idempotency key failed", "err", err.Error())
	}
}

func init() {
	statusByCode[dataimport.CodeJobNotRerunnable] = http.StatusConflict
}

// historyCell is a line's history in one CSV cell: each earlier outcome as
// "<at> <outcome>: <errors>" (the errors as the errors column joins them),
// separated by " || ".
func historyCell(h []dataimport.JobLineHistory) string {
	parts := make([]string, len(h))
	for i, e := range h {
		parts[i] = e.At.String() + " " + e.Outcome
		switch {
		case len(e.Errors) > 0:
			parts[i] += ": " + joinFieldErrors(e.Errors)
		case e.Code != "":
			parts[i] += ": " + e.Code + ": " + e.Detail
		}
	}
	return strings.Join(parts, " || ")
}
