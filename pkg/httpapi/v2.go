package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
)

// The asynchronous (v2) API is a second view of the same import process
// (CONTRACT §8): the same validation, staging history, attempt counter,
// worker and cluster-wide cap as v1. A create answers at once; the account
// is created inside its schedule window, and partners follow its status.

// v2Body is a v2 request: the account object under "payload", and for a
// create the optional task_params.
type v2Body struct {
	Payload    json.RawMessage `json:"payload"`
	TaskParams json.RawMessage `json:"task_params"`
}

type v2TaskParams struct {
	IsDryRun            *bool                `json:"is_dry_run,omitempty"`
	ScheduleWindowStart *dataimport.DateTime `json:"schedule_window_start,omitempty"`
	ScheduleWindowEnd   *dataimport.DateTime `json:"schedule_window_end,omitempty"`
}

// decodeV2 splits a v2 body into the validated account and its task
// parameters. Field errors of the account keep v1's attr paths (relative to
// the account); those of task_params are prefixed "task_params.".
func (s *Server) decodeV2(c *gin.Context, withParams bool) (*dataimport.Account, dataimport.Supplier, v2TaskParams, error) {
	var body v2Body
	var params v2TaskParams
	dec := json.NewDecoder(bytes.NewReader(requestBody(c)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || dec.Decode(new(any)) != io.EOF {
		return nil, dataimport.Supplier{}, params, v2BodyError(err, withParams)
	}
	if len(body.Payload) == 0 || bytes.Equal(body.Payload, []byte("null")) {
		return nil, dataimport.Supplier{}, params, &dataimport.Error{Code: dataimport.CodeInvalidPayload, Detail: "The request body is invalid.",
			Errors: []dataimport.FieldError{{Attr: "payload", Code: dataimport.CodeRequired, Detail: "This field is required."}}}
	}
	var paramErrs []dataimport.FieldError
	if len(body.TaskParams) > 0 && !bytes.Equal(body.TaskParams, []byte("null")) {
		if !withParams {
			return nil, dataimport.Supplier{}, params, v2BodyError(fmt.Errorf(`json: unknown field "task_params"`), false)
		}
		p, err := dataimport.Decode(body.TaskParams, dataimport.CodeInvalidPayload, "The request body is invalid.", func(*v2TaskParams) []dataimport.FieldError { return nil })
		if err != nil {
			e, ok := dataimport.AsError(err)
			if !ok || e.Code == dataimport.CodeParseError {
				return nil, dataimport.Supplier{}, params, err
			}
			for _, fe := range e.Errors {
				fe.Attr = "task_params." + fe.Attr
				paramErrs = append(paramErrs, fe)
			}
		} else {
			params = *p
		}
	}
	if len(paramErrs) == 0 {
		paramErrs = dataimport.CheckWindow(params.window(), time.Now())
	}
	acc, sup, err := s.decodeAccountBody(c, body.Payload)
	if err != nil {
		if e, ok := dataimport.AsError(err); ok && e.Code == dataimport.CodeAccountFailedValidation && len(paramErrs) > 0 {
			e.Errors = append(e.Errors, paramErrs...) // every error at once
		}
		if withParams { // create, not the dry check
			s.recordRefusal(c, sup, body.Payload, err)
		}
		return nil, sup, params, err
	}
	if len(paramErrs) > 0 {
		return nil, sup, params, &dataimport.Error{Code: dataimport.CodeInvalidPayload, Detail: "The request body is invalid.", Errors: paramErrs}
	}
	return acc, sup, params, nil
}

func v2BodyError(err error, withParams bool) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn), errors.Is(err, io.ErrUnexpectedEOF), err == nil:
		return dataimport.Errorf(dataimport.CodeParseError, "The request body is not valid JSON.")
	case errors.As(err, &typ):
		return &dataimport.Error{Code: dataimport.CodeInvalidPayload, Detail: "The request body is invalid.",
			Errors: []dataimport.FieldError{{Attr: dataimport.CodeNonFieldErrors, Code: dataimport.CodeInvalid, Detail: "Expected a JSON object."}}}
	}
	allowed := `"payload"`
	if withParams {
		allowed += ` and "task_params"`
	}
	return &dataimport.Error{Code: dataimport.CodeInvalidPayload, Detail: "The request body is invalid.",
		Errors: []dataimport.FieldError{{Attr: dataimport.CodeNonFieldErrors, Code: dataimport.CodeUnknownField,
			Detail: "Only " + allowed + " may be given."}}}
}

func (p v2TaskParams) window() dataimport.Window {
	var w dataimport.Window
	if p.ScheduleWindowStart != nil {
		w.Start = p.ScheduleWindowStart.Time
	}
	if p.ScheduleWindowEnd != nil {
		w.End = p.ScheduleWindowEnd.Time
	}
	return w
}

// validateV2 serves POST /v2/data-import/accounts/validate/: 200 with an
// empty body, or 400 with every error.
func (s *Server) validateV2(c *gin.Context) {
	if _, _, _, err := s.decodeV2(c, false); err != nil {
		abortWithError(c, err)
		return
	}
	c.Status(http.StatusOK)
}

// createV2 serves POST /v2/data-import/accounts/: validate, stage the payload
// as a new version and schedule one creation attempt; 201 at once.
func (s *Server) createV2(c *gin.Context) {
	ctx := c.Request.Context()
	acc, sup, params, err := s.decodeV2(c, true)
	if err != nil {
		abortWithError(c, err)
		return
	}
	payload, ok := payloadToStage(c, sup, acc)
	if !ok {
		return
	}
	w := params.window()
	sch, err := s.deps.Store.ScheduleV2(ctx, postgres.ScheduleInput{Supplier: sup, External: acc.ExternalAccountNumber, Payload: payload,
		DryRun: params.IsDryRun != nil && *params.IsDryRun, Window: w, Organisation: principal(c).OrganisationID})
	if err != nil {
		abortWithError(c, err)
		return
	}
	p := sch.Process
	task := queue.CreateAccount{ProcessID: p.ID, SupplierID: sup.ID, ExternalAccountNumber: p.ExternalAccountNumber,
		Attempt: p.Attempt, DryRun: p.DryRun, NotBefore: w.Start, OrganisationID: principal(c).OrganisationID}
	if err := s.deps.Creator.Enqueue(ctx, task); err != nil {
		// The schedule is durable in Postgres; the reconciler enqueues it.
		logger(c).WarnContext(ctx, "scheduled account not enqueued; the reconciler will", "process_id", p.ID, "err", err.Error())
	}
	url := v2StatusURL(sup.Code, p.ExternalAccountNumber)
	c.Header("Location", url)
	c.JSON(http.StatusCreated, gin.H{"status": dataimport.V2Pending, "status_url": url})
}

// v2Process loads the process named by the path for the caller, or the
// waiting line of an accepted bulk job when none is staged yet (line not
// nil); 404 for an unknown pair or a supplier the caller may not see.
func (s *Server) v2Process(c *gin.Context) (postgres.StatusProcess, *postgres.AcceptedLine, bool) {
	p, line, err := s.accountOrLine(c)
	if err != nil {
		abortWithError(c, err)
		return p, nil, false
	}
	return p, line, true
}

// v2Status is the v2 status body.
type v2Status struct {
	Status                dataimport.V2Status  `json:"status"`
	Scheduled             bool                 `json:"scheduled"`
	PlatformAccountNumber *string              `json:"platform_account_number"` // null until created
	CreatedAt             dataimport.DateTime  `json:"created_at"`
	ModifiedAt            dataimport.DateTime  `json:"modified_at"`
	ScheduleWindowStart   *dataimport.DateTime `json:"schedule_window_start"`
	ScheduleWindowEnd     *dataimport.DateTime `json:"schedule_window_end"`
	LatestEvent           *v2Event             `json:"latest_event"`
	LatestError           *v2Error             `json:"latest_error"`
	LandedDigest          *string              `json:"landed_digest"` // CONTRACT §14; null until created
}

type v2Event struct {
	Event      string              `json:"event"`
	OccurredAt dataimport.DateTime `json:"occurred_at"`
	Data       json.RawMessage     `json:"data"`
}

type v2Error struct {
	Code   string `json:"code"`
	Detail string `json:"detail"`
	Domain string `json:"domain"`
}

// statusV2 serves GET /v2/data-import/accounts/<supplier>/<external>/.
func (s *Server) statusV2(c *gin.Context) {
	p, line, ok := s.v2Process(c)
	if !ok {
		return
	}
	if line != nil { // accepted in a bulk job: PENDING, nothing scheduled or recorded yet
		at := dataimport.NewDateTime(line.ReceivedAt)
		c.JSON(http.StatusOK, v2Status{Status: dataimport.V2Pending, CreatedAt: at, ModifiedAt: at,
			ScheduleWindowStart: wireTimePtr(line.WindowStart), ScheduleWindowEnd: wireTimePtr(line.WindowEnd)})
		return
	}
	body := v2Status{Status: p.V2Status, Scheduled: p.Scheduled, PlatformAccountNumber: nullIfEmpty(p.PlatformAccountNumber),
		CreatedAt: dataimport.NewDateTime(p.CreatedAt), ModifiedAt: dataimport.NewDateTime(p.ModifiedAt),
		ScheduleWindowStart: wireTimePtr(p.WindowStart), ScheduleWindowEnd: wireTimePtr(p.WindowEnd)}
	if e := p.LatestError; e != nil {
		domain := e.Domain
		if domain == "" {
			domain = dataimport.DomainProcessing
		}
		body.LatestError = &v2Error{Code: e.Code, Detail: e.Detail, Domain: domain}
	}
	ev, found, err := s.deps.Store.LatestEvent(c.Request.Context(), p.ID)
	if err != nil {
		abortWithError(c, err)
		return
	}
	if found {
		e := eventBody(ev)
		body.LatestEvent = &e
	}
	if body.LandedDigest, err = s.landedDigest(c.Request.Context(), p); err != nil {
		abortWithError(c, err)
		return
	}
	c.JSON(http.StatusOK, body)
}

func eventBody(e postgres.Event) v2Event {
	data := e.Data
	if len(data) == 0 {
		data = json.RawMessage("{}")
	}
	return v2Event{Event: e.Event, OccurredAt: dataimport.NewDateTime(e.OccurredAt), Data: data}
}

// maxEventsPage bounds one page of a timeline; it is also the default, so a
// client that does not page still reads every timeline of ordinary length
// in one answer, and the Link header tells it when there is more.
const maxEventsPage = 500

// eventsV2 serves GET …/<supplier>/<external>/events/: the timeline, oldest
// first, a page at a time (page_size, cursor); the next page's address is
// in a Link header (rel="next"), as for the v1 lists.
func (s *Server) eventsV2(c *gin.Context) {
	size, after, ferrs := eventPageParams(c)
	if len(ferrs) > 0 {
		failValidation(c, dataimport.CodeInvalidPayload, "Invalid query parameters.", ferrs)
		return
	}
	p, line, ok := s.v2Process(c)
	if !ok {
		return
	}
	if line != nil { // not staged yet: its timeline starts with the STAGED event
		c.JSON(http.StatusOK, []v2Event{})
		return
	}
	evs, err := s.deps.Store.EventsPage(c.Request.Context(), p.ID, after, size+1)
	if err != nil {
		abortWithError(c, err)
		return
	}
	if len(evs) > size {
		evs = evs[:size]
		c.Header("Link", "<"+v2EventsPageURL(c.Param("supplier"), p.ExternalAccountNumber, size, evs[size-1].ID)+`>; rel="next"`)
	}
	out := make([]v2Event, len(evs))
	for i, e := range evs {
		out[i] = eventBody(e)
	}
	c.JSON(http.StatusOK, out)
}

// eventPageParams reads page_size (1 to maxEventsPage, default
// maxEventsPage) and cursor (from a Link header: the last event's id).
func eventPageParams(c *gin.Context) (size int, after int64, errs []dataimport.FieldError) {
	size = maxEventsPage
	if v, ok := c.GetQuery("page_size"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxEventsPage {
			errs = append(errs, dataimport.FieldError{Attr: "page_size", Code: dataimport.CodeInvalid,
				Detail: "page_size must be a whole number from 1 to " + strconv.Itoa(maxEventsPage) + "."})
		}
		size = n
	}
	if v, ok := c.GetQuery("cursor"); ok {
		id, err := decodeEventCursor(v)
		if err != nil {
			errs = append(errs, dataimport.FieldError{Attr: "cursor", Code: dataimport.CodeInvalid,
				Detail: "cursor must be the value from a Link header."})
		}
		after = id
	}
	return size, after, errs
}

// cancelV2 serves POST …/<supplier>/<external>/cancel/: a scheduled attempt
// that has not started is cancelled (its task becomes a no-op and never
// takes a slot); cancelling again is 200 too; anything else is 409. An
// account of a bulk job not staged yet has no attempt to cancel: 409 too,
// naming the job, whose cancel stops its waiting lines.
func (s *Server) cancelV2(c *gin.Context) {
	p, line, ok := s.v2Process(c)
	if !ok {
		return
	}
	if line != nil {
		renderError(c, &dataimport.Error{Code: dataimport.CodeProcessNotCancellable,
			Detail: fmt.Sprintf("Account %s is waiting in bulk job %d and is not staged yet: cancel the job (POST %s%d/cancel/) to stop it.",
				c.Param("external"), line.JobID, jobsPath, line.JobID),
			Extra: map[string]any{"status": dataimport.V2Pending}})
		return
	}
	now, err := s.deps.Store.Cancel(c.Request.Context(), p.ImportProcess)
	if errors.Is(err, postgres.ErrNotCancellable) {
		renderError(c, &dataimport.Error{Code: dataimport.CodeProcessNotCancellable,
			Detail: fmt.Sprintf("Account %s is %s and can no longer be cancelled.", now.ExternalAccountNumber, now.V2Status),
			Extra:  map[string]any{"status": now.V2Status}})
		return
	}
	if err != nil {
		abortWithError(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": now.V2Status, "status_url": v2StatusURL(c.Param("supplier"), now.ExternalAccountNumber)})
}

// wireTimePtr is the optional form of dataimport.NewDateTime: every
// datetime the API writes goes through that one type.
func wireTimePtr(t *time.Time) *dataimport.DateTime {
	if t == nil {
		return nil
	}
	w := dataimport.NewDateTime(*t)
	return &w
}

// nullIfEmpty is a field that has no value yet: null on the wire (CONTRACT
// §15), never "" — v1 status keeps the interface's "".
func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
