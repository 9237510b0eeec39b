package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// The partner failures API (CONTRACT §13): the failure records of one
// supplier the caller is granted, listed and summarised.

// FailureStore is what the failures endpoints and the stage refusal need
// (postgres/failures.go).
type FailureStore interface {
	RecordStageRefusal(ctx context.Context, orgID, supplierID int64, external string, e *dataimport.Error) error
	EachFailure(ctx context.Context, q postgres.FailureQuery, fn func(postgres.Failure) error) error
	FailureSummary(ctx context.Context, q postgres.FailureQuery) ([]postgres.FailureCount, error)
}

// Page sizes of the failures list.
const (
	DefaultFailuresPage = 100
	MaxFailuresPage     = 1000
)

var (
	failureParamNames = []string{"import_supplier", "code", "attr", "job", "source", "since", "resolved", "limit", "after", "format"}
	summaryParamNames = []string{"import_supplier", "job"}
	failureNumberRe   = regexp.MustCompile(`^[0-9]{1,18}$`)
)

// recordRefusal records a stage's refusal of an account's data (the body's
// account failed validation) for a supplier the caller may act for. Other
// refusals (a bad body, an unknown supplier) name no account. Recording is
// best effort: the partner's 400 does not wait on it.
func (s *Server) recordRefusal(c *gin.Context, sup dataimport.Supplier, body []byte, err error) {
	e, ok := dataimport.AsError(err)
	if !ok || e.Code != dataimport.CodeAccountFailedValidation || sup.ID == 0 || s.deps.Failures == nil {
		return
	}
	var acc struct {
		External any `json:"external_account_number"`
	}
	_ = json.Unmarshal(body, &acc)
	external, _ := acc.External.(string)
	if strings.TrimSpace(external) == "" {
		return // no account to hold the record
	}
	ctx := c.Request.Context()
	if rerr := s.deps.Failures.RecordStageRefusal(ctx, principal(c).OrganisationID, sup.ID, external, e); rerr != nil {
		logger(c).WarnContext(ctx, "stage refusal not recorded", "supplier", sup.Code, "err", rerr.Error())
	}
}

// failureParams reads and checks the query (names lists what this endpoint
// takes), reporting every problem at once.
func (s *Server) failureParams(c *gin.Context, names []string) (postgres.FailureQuery, string, bool) {
	if s.deps.Failures == nil { // a server built without the failures store
		abortWithError(c, dataimport.Errorf(dataimport.CodeNotFound, "Not found."))
		return postgres.FailureQuery{}, "", false
	}
	q := postgres.FailureQuery{OrganisationID: principal(c).OrganisationID, Limit: DefaultFailuresPage}
	format := "json"
	var errs []dataimport.FieldError
	bad := func(attr, code, detail string) {
		errs = append(errs, dataimport.FieldError{Attr: attr, Code: code, Detail: detail})
	}
	errs = append(errs, queryNameProblems(c, names)...)
	supplier := c.Query("import_supplier")
	if supplier == "" {
		bad("import_supplier", dataimport.CodeRequired, "import_supplier is required.")
	}
	number := func(name string, max int64) int64 {
		v, ok := c.GetQuery(name)
		if !ok || v == "" {
			return 0 // absent (an empty after is the first page)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if !failureNumberRe.MatchString(v) || err != nil || n < 1 || n > max {
			bad(name, dataimport.CodeInvalid, fmt.Sprintf("%s must be a whole number from 1 to %d.", name, max))
		}
		return n
	}
	q.JobID = number("job", 1<<62)
	q.After = number("after", 1<<62)
	if v := number("limit", MaxFailuresPage); v > 0 {
		q.Limit = int(v)
	}
	for _, name := range []string{"code", "attr"} {
		v := c.Query(name)
		if len(v) > 200 || strings.ContainsRune(v, 0) {
			bad(name, dataimport.CodeInvalid, name+" must be at most 200 characters.")
		}
		if name == "code" {
			q.Code = v
		} else {
			q.Attr = v
		}
	}
	if v, ok := c.GetQuery("source"); ok {
		if !slices.Contains(postgres.FailureSources, v) {
			bad("source", dataimport.CodeInvalidChoice, "source must be one of "+strings.Join(postgres.FailureSources, ", ")+".")
		}
		q.Source = v
	}
	if v, ok := c.GetQuery("since"); ok {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			bad("since", dataimport.CodeInvalidDatetime, "since must be a date-time such as 2026-01-31T09:00:00Z.")
		}
		q.Since = t
	}
	if v, ok := c.GetQuery("resolved"); ok {
		b, err := strconv.ParseBool(v)
		if err != nil || (v != "true" && v != "false") {
			bad("resolved", dataimport.CodeInvalidChoice, "resolved must be true or false.")
		}
		q.Resolved = &b
	}
	if v, ok := c.GetQuery("format"); ok {
		if v != "json" && v != "ndjson" && v != "csv" {
			bad("format", dataimport.CodeInvalidChoice, "format must be json, ndjson or csv.")
		}
		format = v
	}
	if len(errs) > 0 {
		failValidation(c, dataimport.CodeInvalidPayload, "Invalid query parameters.", errs)
		return q, "", false
	}
	// Not granted is answered exactly as unknown (CONTRACT §3).
	sup, err := s.deps.Store.SupplierForOrganisation(c.Request.Context(), q.OrganisationID, supplier)
	if err != nil {
		if dataimport.ErrorCode(err) == dataimport.CodeSupplierNotFound {
			err = dataimport.Errorf(dataimport.CodeNotFound, "Import supplier %q does not exist.", supplier)
		}
		abortWithError(c, err)
		return q, "", false
	}
	q.SupplierID = sup.ID
	return q, format, true
}

// failureBody is a failure record on the wire: times in the API's one
// datetime form.
type failureBody struct {
	ID                    string                  `json:"id"`
	ImportSupplier        string                  `json:"import_supplier"`
	ExternalAccountNumber string                  `json:"external_account_number"`
	Source                string                  `json:"source"`
	Job                   *int64                  `json:"job"`
	Line                  *int64                  `json:"line"`
	Code                  string                  `json:"code"`
	Detail                string                  `json:"detail"`
	Errors                []dataimport.FieldError `json:"errors"`
	FirstSeen             dataimport.DateTime     `json:"first_seen"`
	LastSeen              dataimport.DateTime     `json:"last_seen"`
	Occurrences           int64                   `json:"occurrences"`
	ResolvedAt            *dataimport.DateTime    `json:"resolved_at"`
}

func newFailureBody(f postgres.Failure) failureBody {
	return failureBody{ID: f.ID, ImportSupplier: f.ImportSupplier, ExternalAccountNumber: f.ExternalAccountNumber, Source: f.Source,
		Job: f.Job, Line: f.Line, Code: f.Code, Detail: f.Detail, Errors: f.Errors, FirstSeen: dataimport.NewDateTime(f.FirstSeen),
		LastSeen: dataimport.NewDateTime(f.LastSeen), Occurrences: f.Occurrences, ResolvedAt: wireTimePtr(f.ResolvedAt)}
}

// FailureCSVHeader is the failures list's CSV header: the first field
// error's code and attr come first, as in job results.
var FailureCSVHeader = []string{"id", "external_account_number", "source", "job", "line", "error_code", "error_attr", "error_detail",
	"errors", "envelope_code", "occurrences", "first_seen", "last_seen", "resolved_at"}

// listFailures serves GET /v1/data-import/failures/: a page of records in
// id order, streamed from Postgres as one JSON object, NDJSON or CSV;
// next (and the Link header) is the cursor of the next page, "" at the end.
func (s *Server) listFailures(c *gin.Context) {
	q, format, ok := s.failureParams(c, failureParamNames)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	c.Header("Cache-Control", "no-store")
	w := bufio.NewWriterSize(c.Writer, 32<<10)
	var write func(postgres.Failure) error
	var end func(next string)
	n, last := 0, int64(0)
	switch format {
	case "csv":
		cw := startCSV(c, w, "failures.csv", FailureCSVHeader)
		write = func(f postgres.Failure) error {
			code, attr, detail := firstFieldError(f.Code, f.Detail, f.Errors)
			resolved := ""
			if f.ResolvedAt != nil {
				resolved = f.ResolvedAt.Format(time.RFC3339)
			}
			return cw.Write([]string{f.ID, cell(f.ExternalAccountNumber), f.Source, optInt(f.Job), optInt(f.Line), code, cell(attr), cell(detail),
				cell(joinFieldErrors(f.Errors)), f.Code, strconv.FormatInt(f.Occurrences, 10),
				f.FirstSeen.Format(time.RFC3339), f.LastSeen.Format(time.RFC3339), resolved})
		}
		end = func(string) { cw.Flush() }
	case "ndjson":
		c.Header("Content-Type", "application/x-ndjson")
		c.Status(http.StatusOK)
		enc := json.NewEncoder(w)
		write = func(f postgres.Failure) error { return enc.Encode(newFailureBody(f)) }
		end = func(string) {}
	default:
		c.Header("Content-Type", "application/json; charset=utf-8")
		c.Status(http.StatusOK)
		_, _ = w.WriteString(`{"failures":[`)
		write = func(f postgres.Failure) error {
			if n > 0 {
				_ = w.WriteByte(',')
			}
			b, err := json.Marshal(newFailureBody(f))
			if err != nil {
				return err
			}
			_, err = w.Write(b)
			return err
		}
		end = func(next string) {
			b, _ := json.Marshal(next)
			_, _ = fmt.Fprintf(w, `],"next":%s}`, b)
		}
	}
	// Streamed, so the next cursor is known only at the end: it closes the
	// JSON page; an NDJSON or CSV reader pages on with the last row's id.
	err := s.deps.Failures.EachFailure(ctx, q, func(f postgres.Failure) error {
		if err := write(f); err != nil {
			return err
		}
		n++
		last = f.Cursor()
		return nil
	})
	next := ""
	if n == q.Limit {
		next = strconv.FormatInt(last, 10)
	}
	if err == nil {
		end(next)
		err = w.Flush()
	}
	if err != nil {
		// The status is sent: the truncated body is all we can do.
		logger(c).WarnContext(ctx, "failures stream stopped", "err", err.Error())
		c.Abort()
	}
}

// failureSummaryBody is the summary's answer.
type failureSummaryBody struct {
	ImportSupplier string                  `json:"import_supplier"`
	Job            *int64                  `json:"job"`
	ByCode         []postgres.FailureCount `json:"by_code"`
}

// failureSummary serves GET /v1/data-import/failures/summary/: per (code,
// attr) of the records' field errors, how many unresolved and resolved,
// with an example account.
func (s *Server) failureSummary(c *gin.Context) {
	q, _, ok := s.failureParams(c, summaryParamNames)
	if !ok {
		return
	}
	counts, err := s.deps.Failures.FailureSummary(c.Request.Context(), q)
	if err != nil {
		abortWithError(c, err)
		return
	}
	body := failureSummaryBody{ImportSupplier: c.Query("import_supplier"), ByCode: counts}
	if q.JobID != 0 {
		body.Job = &q.JobID
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, body)
}

// firstFieldError is what a CSV row's error_code, error_attr and
// error_detail say: the first field error (the field code a partner sorts
// by), or the envelope's code and detail when there is none.
func firstFieldError(code, detail string, errs []dataimport.FieldError) (string, string, string) {
	if len(errs) > 0 {
		return errs[0].Code, errs[0].Attr, errs[0].Detail
	}
	return code, "", detail
}

// joinFieldErrors is a CSV cell of every field error: "attr: code: detail; …".
func joinFieldErrors(errs []dataimport.FieldError) string {
	fields := make([]string, len(errs))
	for i, e := range errs {
		fields[i] = e.Attr + ": " + e.Code + ": " + e.Detail
	}
	return strings.Join(fields, "; ")
}

func optInt(p *int64) string {
	if p == nil {
		return ""
	}
	return strconv.FormatInt(*p, 10)
}

// queryNameProblems lists the query's parameters that are not among names
// or are given more than once, in name order.
func queryNameProblems(c *gin.Context, names []string) []dataimport.FieldError {
	var errs []dataimport.FieldError
	values := c.Request.URL.Query()
	for _, name := range slices.Sorted(maps.Keys(values)) {
		if !slices.Contains(names, name) {
			errs = append(errs, dataimport.FieldError{Attr: name, Code: dataimport.CodeUnknownField,
				Detail: "Unknown query parameter; this endpoint takes " + strings.Join(names, ", ") + "."})
		} else if len(values[name]) > 1 {
			errs = append(errs, dataimport.FieldError{Attr: name, Code: dataimport.CodeInvalid, Detail: name + " may be given once."})
		}
	}
	return errs
}
