package httpapi

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/market"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
)

// Bulk import jobs (CONTRACT §11): an NDJSON upload of many accounts is
// validated line by line with the rules of the stage endpoint, stored in
// Postgres as it streams in, and committed as one job; a worker then stages
// and creates its accounts through the same import processes.

// JobStore is what the job endpoints need from the database.
type JobStore interface {
	CreateJob(ctx context.Context, in postgres.NewJob, staleAfter time.Duration) (dataimport.Job, *postgres.IdempotentJob, error)
	TakeOverJob(ctx context.Context, jobID int64, staleAfter time.Duration) (epoch int, ok bool, err error)
	ReceiveJob(ctx context.Context, jobID int64, epoch int, bodyBytes func() int64, bodySHA256 func() []byte, feed func(emit func(postgres.JobLine) error) error) (dataimport.JobCounters, error)
	FailJob(ctx context.Context, jobID int64, epoch int, e *dataimport.Error) error
	Job(ctx context.Context, orgID, jobID int64) (postgres.JobView, error)
	Jobs(ctx context.Context, orgID int64, before int64, limit int) ([]postgres.JobView, error)
	EachJobRecord(ctx context.Context, jobID int64, outcomes []string, fn func(dataimport.JobRecord) error) error
	CancelJob(ctx context.Context, orgID, jobID int64) (postgres.JobView, error)
	RetryJob(ctx context.Context, orgID, jobID int64, code, attr string) (postgres.Retried, error)
	ReceiveJobCorrections(ctx context.Context, jobID int64, rerunID string, feed func(emit func(postgres.JobCorrection) error) error) error
	ApplyJobCorrections(ctx context.Context, orgID, jobID int64, rerunID string, maxRefused int) (postgres.JobRerun, error)
}

// DefaultMaxJobBytes applies when Config.MaxJobBytes is not set.
const DefaultMaxJobBytes = 2 << 30

// receivingStale is how long an upload's heartbeat (every second) may stop
// before a retry with the same Idempotency-Key takes its job over.
const receivingStale = 10 * time.Second

const jobsPath = "/v1/data-import/jobs/"

// jobRoutes registers the job endpoints. Their group does not read the body
// up front (bodyRules) nor hash it (the Idempotency-Key middleware): an
// upload is streamed, and handles its key itself (see postJob).
func (s *Server) jobRoutes(g *gin.RouterGroup) {
	g.POST("/", s.postJob)
	g.GET("/", s.listJobs)
	g.GET("/:id/", s.getJob)
	g.GET("/:id/results/", s.jobResults)
	// Corrected lines stream like an upload, and handle their key themselves.
	g.POST("/:id/lines/", s.postJobLines)
	// Cancel has no body: the usual body rules and Idempotency-Key apply.
	cancel := []gin.HandlerFunc{bodyRules(s.cfg.MaxBodyBytes)}
	if s.deps.Idempotency != nil {
		cancel = append(cancel, s.idempotency())
	}
	g.POST("/:id/cancel/", append(cancel, s.cancelJob)...)
	g.POST("/:id/retry/", append(cancel, s.retryJob)...) // jobs_retry.go
}

func (s *Server) maxJobBytes() int64 {
	if s.cfg.MaxJobBytes > 0 {
		return s.cfg.MaxJobBytes
	}
	return DefaultMaxJobBytes
}

var ndjsonTypes = map[string]bool{"application/x-ndjson": true, "application/ndjson": true, "application/jsonl": true,
	"application/x-jsonlines": true, "application/json": true}

// jobQuery is the upload's options.
type jobQuery struct {
	supplier, team string
	create, dryRun bool
	window         dataimport.Window
	declared       dataimport.ControlDeclared // control totals (CONTRACT §14)
}

func parseJobQuery(c *gin.Context) (jobQuery, []dataimport.FieldError) {
	var errs []dataimport.FieldError
	known := map[string]bool{"import_supplier": true, "operations_team_name": true, "create": true, "dry_run": true,
		"schedule_window_start": true, "schedule_window_end": true}
	for _, name := range dataimport.ControlNames {
		known["expected_"+name] = true
	}
	for k := range c.Request.URL.Query() {
		if !known[k] {
			errs = append(errs, dataimport.FieldError{Attr: k, Code: dataimport.CodeUnknownField, Detail: "Unknown query parameter."})
		}
	}
	q := jobQuery{supplier: strings.TrimSpace(c.Query("import_supplier")), team: strings.TrimSpace(c.Query("operations_team_name"))}
	q.create = boolQuery(c, "create", true, &errs)
	q.dryRun = boolQuery(c, "dry_run", false, &errs)
	if q.supplier == "" {
		errs = append(errs, dataimport.FieldError{Attr: "import_supplier", Code: dataimport.CodeRequired, Detail: "This query parameter is required."})
	}
	if q.create && q.team == "" {
		errs = append(errs, dataimport.FieldError{Attr: "operations_team_name", Code: dataimport.CodeRequired,
			Detail: "This query parameter is required when the job creates accounts."})
	}
	// The v2 schedule window, with the v2 rules.
	for _, w := range []struct {
		name string
		dst  *time.Time
	}{{"schedule_window_start", &q.window.Start}, {"schedule_window_end", &q.window.End}} {
		if v, ok := c.GetQuery(w.name); ok {
			t, err := dataimport.ParseDateTime(v)
			if err != nil {
				errs = append(errs, dataimport.FieldError{Attr: w.name, Code: dataimport.CodeInvalidDatetime,
					Detail: "Must be a date and time such as 2025-06-01T22:00:00Z."})
				continue
			}
			*w.dst = t.Time
		}
	}
	if !q.window.Start.IsZero() || !q.window.End.IsZero() {
		if !q.create {
			errs = append(errs, dataimport.FieldError{Attr: "schedule_window_start", Code: dataimport.CodeInvalid,
				Detail: "A schedule window needs create=true."})
		}
		for _, e := range dataimport.CheckWindow(q.window, time.Now()) {
			e.Attr = strings.TrimPrefix(e.Attr, "task_params.")
			errs = append(errs, e)
		}
	}
	declared, derrs := dataimport.ParseControlDeclared(c.GetQuery)
	q.declared = declared
	errs = append(errs, derrs...)
	if q.dryRun && !q.create {
		errs = append(errs, dataimport.FieldError{Attr: "dry_run", Code: dataimport.CodeInvalid, Detail: "dry_run needs create=true."})
	}
	return q, errs
}

// postJob serves POST /jobs/: 202 {id, status_url} once the whole body is
// durably stored. With Idempotency-Key, a retry gets the same job: replayed
// once received; taken over (and received again) when the first upload died
// mid-body; 409 while that upload is still alive; 422 with other options or
// another body. The body is never held in memory: its SHA-256 (of the NDJSON,
// after gzip) is computed as it streams in and kept with the job, and a
// retry of a received job is read through once to compare digests.
func (s *Server) postJob(c *gin.Context) {
	ctx := c.Request.Context()
	r := c.Request
	if !s.uploadHeaders(c) {
		return
	}
	q, errs := parseJobQuery(c)
	if len(errs) > 0 {
		failValidation(c, dataimport.CodeInvalidPayload, "Invalid query parameters.", errs)
		return
	}
	org := principal(c).OrganisationID
	sup, mkt, ok := s.acceptingSupplier(c, org, q.supplier)
	if !ok {
		return
	}
	var teamID *int64
	if q.create {
		team, err := s.deps.Store.TeamByName(ctx, q.team)
		if err != nil {
			abortWithError(c, err)
			return
		}
		teamID = &team.ID
	}
	key, ok := uploadKey(c)
	if !ok {
		return
	}
	// The upload's slots are taken before its job exists: a refused upload
	// leaves nothing behind.
	release, ok := s.takeUploadSlots(c, org)
	if !ok {
		return
	}
	defer release()
	job, existing, err := s.deps.Jobs.CreateJob(ctx, postgres.NewJob{OrganisationID: org, SupplierID: sup.ID, TeamID: teamID,
		Create: q.create, DryRun: q.dryRun, Window: q.window, Declared: q.declared, IdempotencyKey: key, Query: r.URL.RawQuery, KeyTTL: s.idempotencyTTL()}, receivingStale)
	if err != nil {
		abortWithError(c, err)
		return
	}
	epoch := 0 // a new job's first receive epoch
	if existing != nil {
		k := dataimport.KeyedJob{State: existing.Job.State, Stale: existing.Stale, HasDigest: existing.BodySHA256 != nil}
		if existing.Job.Error != nil {
			k.ErrorCode = existing.Job.Error.Code
		}
		sameOptions := existing.Query == r.URL.RawQuery && existing.Job.SupplierID == sup.ID
		d := dataimport.DecideJobRetry(k, sameOptions, dataimport.BodyUnread)
		if d == dataimport.RetryReadBody {
			sum, err := s.bodyDigest(c)
			if err != nil {
				renderError(c, err)
				return
			}
			match := dataimport.BodyOther
			if bytes.Equal(sum, existing.BodySHA256) {
				match = dataimport.BodySame
			}
			d = dataimport.DecideJobRetry(k, sameOptions, match)
		}
		switch d {
		case dataimport.RetryTakeOver:
		case dataimport.RetryReplay:
			c.Header(HeaderIdempotentReplayed, "true")
			s.jobAccepted(c, existing.Job.ID)
			return
		case dataimport.RetryReplayFailure:
			// The body was refused as such: the same body fails the same way.
			c.Header(HeaderIdempotentReplayed, "true")
			renderError(c, existing.Job.Error)
			return
		case dataimport.RetryInUse:
			renderError(c, &dataimport.Error{Code: dataimport.CodeIdempotencyKeyInUse, RetryAfterSeconds: int(receivingStale / time.Second),
				Detail: "An upload with this Idempotency-Key is still being received; retry once it has finished or stopped."})
			return
		case dataimport.RetryOtherBody:
			renderError(c, dataimport.Errorf(dataimport.CodeIdempotencyKeyReused,
				"This Idempotency-Key was used with another body; use a new key for a new upload."))
			return
		default: // RetryOtherRequest
			renderError(c, dataimport.Errorf(dataimport.CodeIdempotencyKeyReused,
				"This Idempotency-Key was used with another request (method, path or query); use a new key for a new request."))
			return
		}
		var took bool
		epoch, took, err = s.deps.Jobs.TakeOverJob(ctx, existing.Job.ID, receivingStale)
		if err != nil {
			abortWithError(c, err)
			return
		}
		if !took {
			renderError(c, &dataimport.Error{Code: dataimport.CodeIdempotencyKeyInUse, RetryAfterSeconds: 1,
				Detail: "Another retry with this Idempotency-Key took the upload over."})
			return
		}
		job = existing.Job
	}
	s.receiveJob(c, job, epoch, sup, mkt, key != "")
}

// uploadHeaders checks what an upload's headers say of its body (length,
// media type, encoding); false means the refusal is rendered.
func (s *Server) uploadHeaders(c *gin.Context) bool {
	r := c.Request
	if max := s.maxJobBytes(); r.ContentLength > max {
		renderError(c, tooLarge(max))
		return false
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !ndjsonTypes[mt] {
		renderError(c, dataimport.Errorf(dataimport.CodeUnsupportedMediaType,
			"Unsupported media type %q in request; send application/x-ndjson, one account per line.", r.Header.Get("Content-Type")))
		return false
	}
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	if enc != "" && enc != "identity" && enc != "gzip" {
		renderError(c, dataimport.Errorf(dataimport.CodeUnsupportedMediaType, "Unsupported Content-Encoding %q; send gzip or nothing.", enc))
		return false
	}
	return true
}

// uploadKey is an upload's Idempotency-Key ("" when none); false means
// the malformed key's refusal is rendered. Uploads handle their key
// themselves: their body is streamed, never held for the middleware.
func uploadKey(c *gin.Context) (string, bool) {
	values := c.Request.Header.Values(HeaderIdempotencyKey)
	if len(values) == 0 {
		return "", true
	}
	if !validIdempotencyKey(values) {
		renderError(c, dataimport.Errorf(dataimport.CodeInvalidIdempotencyKey,
			"Idempotency-Key must be sent once, with 1 to %d printable ASCII characters.", maxIdempotencyKeyLen))
		return "", false
	}
	return values[0], true
}

// uploadBody is an upload's body as sent (counted, with an idle deadline
// renewed per read) and as NDJSON (gunzipped when sent with gzip, bounded
// by MAX_JOB_BYTES and MAX_GZIP_RATIO).
type uploadBody struct {
	raw   *countingReader
	idle  *idleReader
	plain io.Reader
	close func()
}

// jobBody opens the body; a gzip header that does not read is a parse
// error (or the idle timeout, when nothing arrived).
func (s *Server) jobBody(c *gin.Context, keyed bool) (uploadBody, *dataimport.Error) {
	max := s.maxJobBytes()
	idle := &idleReader{r: c.Request.Body, rc: http.NewResponseController(c.Writer), idle: s.cfg.Uploads.IdleTimeout}
	raw := &countingReader{r: http.MaxBytesReader(c.Writer, io.NopCloser(idle), max)}
	b := uploadBody{raw: raw, idle: idle, plain: raw, close: func() {}}
	if !strings.EqualFold(strings.TrimSpace(c.Request.Header.Get("Content-Encoding")), "gzip") {
		return b, nil
	}
	gz, gzErr := gzip.NewReader(raw)
	if gzErr != nil {
		if idle.timedOut {
			return b, uploadIdleTimeout(s.cfg.Uploads.IdleTimeout, keyed)
		}
		if raw.lost(c.Request.Context()) { // cut before the gzip header was in
			return b, errUploadLost
		}
		return b, dataimport.Errorf(dataimport.CodeParseError, "The body is not valid gzip.")
	}
	// A small compressed body may not expand past the limit, nor by more
	// than the ratio.
	lim := s.cfg.Uploads
	b.plain = &limitReader{r: &ratioReader{r: gz, compressed: raw.count, floor: lim.gzipFloor(), ratio: lim.MaxGzipRatio}, left: max, max: max}
	b.close = func() { _ = gz.Close() }
	return b, nil
}

// bodyError is the answer to a body that failed to read, or nil when err
// is none of the body's own failures.
func (s *Server) bodyError(b uploadBody, err error, keyed bool) *dataimport.Error {
	var mbe *http.MaxBytesError
	switch {
	case b.idle != nil && b.idle.timedOut:
		return uploadIdleTimeout(s.cfg.Uploads.IdleTimeout, keyed)
	case errors.Is(err, errCompressionRatio):
		return compressionRatioExceeded(s.cfg.Uploads.MaxGzipRatio)
	case errors.As(err, &mbe):
		return tooLarge(s.maxJobBytes())
	case errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF):
		return dataimport.Errorf(dataimport.CodeParseError, "The body ended early or is not valid gzip.")
	}
	return nil
}

// bodyDigest reads a retried upload through and returns its SHA-256, the
// digest receiveJob keeps with a job.
func (s *Server) bodyDigest(c *gin.Context) ([]byte, *dataimport.Error) {
	b, bad := s.jobBody(c, true)
	if bad != nil {
		return nil, bad
	}
	defer b.close()
	h := sha256.New()
	if _, err := io.Copy(h, b.plain); err != nil {
		if e := s.bodyError(b, err, true); e != nil && e.Code != dataimport.CodeParseError {
			return nil, e
		}
		if b.raw.lost(c.Request.Context()) {
			return nil, errUploadLost
		}
		return nil, dataimport.Errorf(dataimport.CodeParseError, "The body ended early or is not valid gzip.")
	}
	return h.Sum(nil), nil
}

// receiveJob streams the body into the job and answers.
// epoch is the job's receive epoch this request owns (0 for a new job).
func (s *Server) receiveJob(c *gin.Context, job dataimport.Job, epoch int, sup dataimport.Supplier, mkt dataimport.Market, keyed bool) {
	ctx := c.Request.Context()
	ub, bad := s.jobBody(c, keyed)
	if bad != nil {
		s.uploadFailed(c, job.ID, epoch, bad)
		return
	}
	defer ub.close()
	digest := sha256.New()
	body := io.TeeReader(ub.plain, digest)
	lim := s.cfg.Uploads
	var received, invalid int64
	// The body is read and validated on this request's goroutine at the
	// process's priority: a niced thread in a process serving status reads
	// stalls them (see package priority).
	_, err := s.deps.Jobs.ReceiveJob(ctx, job.ID, epoch, ub.raw.count, func() []byte { return digest.Sum(nil) }, func(emit func(postgres.JobLine) error) error {
		return s.uploadLines(ctx, body, sup, mkt, true, func(jl postgres.JobLine) error {
			if err := emit(jl); err != nil {
				return err
			}
			// A job that is mostly garbage stops here, whenever it turns
			// so: its lines so far are kept for its report.
			received++
			if jl.Err != nil {
				invalid++
			}
			if received >= lim.InvalidAfter && float64(invalid) > lim.MaxInvalidRatio*float64(received) {
				return &postgres.StopReceiving{Err: mostlyInvalid(invalid, received)}
			}
			return nil
		})
	})
	if err != nil {
		var stop *postgres.StopReceiving
		bodyErr := s.uploadBodyFailure(ctx, ub, err, keyed)
		switch {
		case errors.As(err, &stop):
			// The job failed with its lines kept (ReceiveJob).
			renderError(c, stop.Err)
		case errors.Is(err, postgres.ErrUploadTakenOver):
			renderError(c, &dataimport.Error{Code: dataimport.CodeIdempotencyKeyInUse,
				Detail: "The job stopped receiving this upload: it was cancelled, or a retry with the same Idempotency-Key took it over."})
		case bodyErr != nil:
			s.uploadFailed(c, job.ID, epoch, bodyErr)
		default:
			if ferr := s.deps.Jobs.FailJob(context.WithoutCancel(ctx), job.ID, epoch, dataimport.Errorf(dataimport.CodeServerError,
				"The upload could not be stored; nothing of it was kept. Upload it again.")); ferr != nil {
				logger(c).WarnContext(ctx, "bulk job not failed", "job_id", job.ID, "err", ferr.Error())
			}
			abortWithError(c, err)
		}
		return
	}
	if err := s.deps.Creator.Enqueue(ctx, queue.BulkJob{JobID: job.ID}); err != nil {
		// The job is durably received; the reconciler wakes it.
		logger(c).WarnContext(ctx, "bulk job task not enqueued; the reconciler will", "job_id", job.ID, "err", err.Error())
	}
	s.jobAccepted(c, job.ID)
}

// uploadLines reads an upload's NDJSON body line by line within
// MAX_JOB_LINES and the per-line limit, and validates every non-blank line
// as the stage endpoint does (validateLine); fn gets each line, in order.
// A job's upload and a re-run of its lines both read their body here.
func (s *Server) uploadLines(ctx context.Context, body io.Reader, sup dataimport.Supplier, mkt dataimport.Market, controlLines bool, fn func(postgres.JobLine) error) error {
	lim := s.cfg.Uploads
	lineMax := int(min(s.cfg.MaxBodyBytes, int64(1<<30)))
	if lineMax <= 0 {
		lineMax = 5 << 20
	}
	rules := dataimport.AccountRules{PhoneRegion: sup.PhoneRegion, Today: dataimport.DateOf(time.Now().UTC()), Market: mkt}
	if s.deps.Vendors != nil {
		rules.PaymentVendors = s.deps.Vendors.Names() // as the stage endpoint
	}
	rd := bufio.NewReaderSize(body, 64<<10)
	for n := int64(1); ; n++ {
		line, tooLong, err := readLine(rd, lineMax)
		if n > lim.MaxLines && (len(line) > 0 || tooLong || err == nil) {
			return errTooManyLines
		}
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			var jl postgres.JobLine
			if tooLong {
				jl = postgres.JobLine{Line: int(n), Err: dataimport.Errorf(dataimport.CodeRequestTooLarge,
					"Line is longer than the limit of %d bytes.", lineMax)}
			} else if ctl, ok := controlJobLine(int(n), line); controlLines && ok {
				jl = ctl
			} else {
				jl = s.validateLine(ctx, int(n), line, sup, rules)
			}
			if err := fn(jl); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// controlJobLine is an upload's control line (CONTRACT §14: the totals its
// source declares), when line is one; a bad one is an invalid line.
func controlJobLine(n int, line []byte) (postgres.JobLine, bool) {
	decl, isCtl, cerr := dataimport.ParseControlLine(bytes.TrimSpace(line))
	if !isCtl {
		return postgres.JobLine{}, false
	}
	if cerr == nil && decl == nil {
		decl = dataimport.ControlDeclared{}
	}
	return postgres.JobLine{Line: n, Control: decl, Err: cerr}, true
}

// uploadBodyFailure is the answer to an upload whose body could not be
// read through (uploadLines' error): too many lines, the body's own bounds
// (idle timeout, gzip ratio, too large), lost (the partner hung up or the
// connection was cut), unreadable. nil: err is not the body's.
func (s *Server) uploadBodyFailure(ctx context.Context, ub uploadBody, err error, keyed bool) *dataimport.Error {
	bodyErr := s.bodyError(ub, err, keyed)
	switch {
	case errors.Is(err, errTooManyLines):
		return tooManyLines(s.cfg.Uploads.MaxLines)
	case bodyErr != nil && bodyErr.Code != dataimport.CodeParseError:
		return bodyErr
	case ub.raw.lost(ctx):
		// The request's reads fail with an unexpected EOF, which a gzip
		// stream cut short shows too: so this comes before the parse
		// error. Nothing is kept; a retry with the same key and body
		// resumes at once.
		return errUploadLost
	}
	return bodyErr
}

// errTooManyLines ends a body past MAX_JOB_LINES.
var errTooManyLines = errors.New("upload has more lines than MAX_JOB_LINES")

// errUploadLost fails a job whose body stopped coming (see dataimport.CodeUploadLost).
var errUploadLost = dataimport.Errorf(dataimport.CodeUploadLost,
	"The upload stopped before the whole body was received; nothing of it was kept. Send it again with the same Idempotency-Key to resume.")

// uploadFailed fails the job (nothing of it was kept) if epoch is still its
// receive epoch, and answers e. A job failed upload_lost or
// upload_idle_timeout is resumed by a retry with the same key
// (dataimport.ResumableJobFailure).
func (s *Server) uploadFailed(c *gin.Context, jobID int64, epoch int, e *dataimport.Error) {
	if err := s.deps.Jobs.FailJob(context.WithoutCancel(c.Request.Context()), jobID, epoch, e); err != nil {
		abortWithError(c, err)
		return
	}
	renderError(c, e)
}

func (s *Server) jobAccepted(c *gin.Context, id int64) {
	url := jobURL(id)
	c.Header("Location", url)
	c.JSON(http.StatusAccepted, gin.H{"id": id, "status_url": url})
}

func jobURL(id int64) string { return jobsPath + strconv.FormatInt(id, 10) + "/" }

// validateLine runs the stage endpoint's validation on one line: the same
// decoder and rules with the supplier's phone region and market, then the
// catalogue check. The line's account must name the job's supplier.
func (s *Server) validateLine(ctx context.Context, n int, line []byte, sup dataimport.Supplier, rules dataimport.AccountRules) postgres.JobLine {
	jl := postgres.JobLine{Line: n}
	acc, err := dataimport.Decode(line, dataimport.CodeAccountFailedValidation, "Account failed validation.", func(a *dataimport.Account) []dataimport.FieldError {
		errs := dataimport.ValidateAccount(a, rules)
		if a.ImportSupplier != "" && a.ImportSupplier != sup.Code {
			errs = append(errs, dataimport.FieldError{Attr: "import_supplier", Code: dataimport.CodeInvalid,
				Detail: fmt.Sprintf("Every line of this job must be for import_supplier %s.", sup.Code)})
		}
		return errs
	})
	if err == nil {
		err = s.deps.Store.CheckAccountCatalogue(ctx, sup, acc)
	}
	if err == nil {
		payload, mErr := json.Marshal(acc)
		if mErr == nil {
			f := dataimport.FiguresOf(acc)
			jl.External, jl.Payload, jl.Figures = acc.ExternalAccountNumber, payload, &f
			return jl
		}
		err = mErr
	}
	e, ok := dataimport.AsError(err)
	if !ok {
		e = dataimport.Errorf(dataimport.CodeServerError, "The line could not be validated.")
	}
	jl.Err = e
	jl.External, jl.Payload = lenientExternal(line), line // the store keeps the line's text, bounded
	return jl
}

// lenientExternal picks the external number out of an invalid line, when
// it has a usable one, so the results can name the account.
func lenientExternal(line []byte) string {
	var v struct {
		External any `json:"external_account_number"`
	}
	if json.Unmarshal(line, &v) != nil {
		return ""
	}
	s, ok := v.External.(string)
	s = strings.TrimSpace(s)
	if !ok || !cleanText(s, 128) {
		return ""
	}
	return s
}

// readLine reads one line without its newline. A line longer than max is
// read to its end and dropped (tooLong), so memory stays bounded by max.
func readLine(rd *bufio.Reader, max int) (line []byte, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := rd.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > max+1 {
				tooLong, buf = true, nil
			} else {
				buf = append(buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		buf = bytes.TrimRight(buf, "\r\n")
		return buf, tooLong, err
	}
}

// countingReader counts the bytes read; the upload's heartbeat reads the
// count from its own goroutine.
type countingReader struct {
	r   io.Reader
	n   atomic.Int64
	err error // the request body's first error other than io.EOF (read on the request's goroutine only)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	if err != nil && !errors.Is(err, io.EOF) && c.err == nil {
		c.err = err
	}
	return n, err
}

// lost reports whether the body stopped coming: the client went away, or
// reading the request's own body failed (a connection cut mid-body is an
// unexpected EOF there), as opposed to a complete body that is invalid.
func (c *countingReader) lost(ctx context.Context) bool {
	var mbe *http.MaxBytesError
	return ctx.Err() != nil || (c.err != nil && !errors.As(c.err, &mbe))
}

func (c *countingReader) count() int64 { return c.n.Load() }

// limitReader fails with *http.MaxBytesError once more than max bytes came out.
type limitReader struct {
	r         io.Reader
	left, max int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, &http.MaxBytesError{Limit: l.max}
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return n, &http.MaxBytesError{Limit: l.max}
	}
	return n, err
}

// jobBody is a job as the API shows it.
type jobBody struct {
	ID                int64                  `json:"id"`
	State             dataimport.JobState    `json:"state"`
	ImportSupplier    string                 `json:"import_supplier"`
	Create            bool                   `json:"create"`
	DryRun            bool                   `json:"dry_run"`
	WindowStart       *dataimport.DateTime   `json:"schedule_window_start"`
	WindowEnd         *dataimport.DateTime   `json:"schedule_window_end"`
	Counters          dataimport.JobCounters `json:"counters"`
	AccountsPerSecond float64                `json:"accounts_per_second"`
	ETASeconds        *int64                 `json:"eta_seconds"`
	BodyBytes         int64                  `json:"body_bytes"`
	Error             *envelope              `json:"error,omitempty"`
	CreatedAt         dataimport.DateTime    `json:"created_at"`
	ReceivedAt        *dataimport.DateTime   `json:"received_at"`
	FinishedAt        *dataimport.DateTime   `json:"finished_at"`
	Held              *string                `json:"held"`
	// Control totals (CONTRACT §14): each declared total beside what was
	// received and created; reconciliation is none when nothing was declared.
	Control        []dataimport.ControlTotal `json:"control"`
	Reconciliation string                    `json:"reconciliation"`
	StatusURL      string                    `json:"status_url"`
	ResultsURL     string                    `json:"results_url"`
}

func newJobBody(v postgres.JobView) jobBody {
	j := v.Job
	b := jobBody{ID: j.ID, State: j.State, ImportSupplier: j.SupplierCode, Create: j.Create, DryRun: j.DryRun, Counters: j.Counters,
		WindowStart: wireTimePtr(j.WindowStart), WindowEnd: wireTimePtr(j.WindowEnd),
		BodyBytes: j.BodyBytes, CreatedAt: dataimport.NewDateTime(j.CreatedAt), ReceivedAt: wireTimePtr(j.ReceivedAt),
		FinishedAt: wireTimePtr(j.FinishedAt), StatusURL: jobURL(j.ID), ResultsURL: jobURL(j.ID) + "results/"}
	if j.Error != nil {
		b.Error = &envelope{Code: j.Error.Code, Detail: j.Error.Detail}
	}
	if j.Held != "" {
		held := j.Held
		b.Held = &held
	}
	b.Control, b.Reconciliation = j.Totals()
	// Lines per second over the last minute, from the worker's samples.
	if n := len(v.Rate); n >= 2 && v.Rate[n-1].T > v.Rate[0].T {
		b.AccountsPerSecond = float64(v.Rate[n-1].D-v.Rate[0].D) / (v.Rate[n-1].T - v.Rate[0].T)
		b.AccountsPerSecond = float64(int64(b.AccountsPerSecond*10+0.5)) / 10
	}
	switch {
	case j.State.Finished():
		var zero int64
		b.ETASeconds = &zero
	case j.State == dataimport.JobProcessing && b.AccountsPerSecond > 0:
		left := j.Counters.Pending + j.Counters.InProgress
		if j.Create && !j.DryRun {
			left += j.Counters.Staged
		}
		eta := int64(float64(left)/b.AccountsPerSecond + 0.5)
		b.ETASeconds = &eta
	}
	return b
}

// jobParam reads the job id of the path; any other value names no job.
func (s *Server) jobParam(c *gin.Context) (int64, bool) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		renderError(c, postgres.ErrJobNotFound)
		return 0, false
	}
	return id, true
}

// getJob serves GET /jobs/<id>/: state, counters, rate and ETA (one
// indexed row read, whatever the job's size).
func (s *Server) getJob(c *gin.Context) {
	id, ok := s.jobParam(c)
	if !ok {
		return
	}
	v, err := s.deps.Jobs.Job(c.Request.Context(), principal(c).OrganisationID, id)
	if err != nil {
		abortWithError(c, err)
		return
	}
	c.JSON(http.StatusOK, newJobBody(v))
}

// listJobs serves GET /jobs/: the organisation's jobs, newest first, in
// pages (page_size, default 100; the next page in a Link header).
func (s *Server) listJobs(c *gin.Context) {
	size := 100
	var errs []dataimport.FieldError
	if v, ok := c.GetQuery("page_size"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			errs = append(errs, dataimport.FieldError{Attr: "page_size", Code: dataimport.CodeInvalid, Detail: "page_size must be 1 to 1000."})
		}
		size = n
	}
	var before int64
	if v, ok := c.GetQuery("cursor"); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			errs = append(errs, dataimport.FieldError{Attr: "cursor", Code: dataimport.CodeInvalid, Detail: "cursor is not valid."})
		}
		before = n
	}
	if len(errs) > 0 {
		failValidation(c, dataimport.CodeInvalidPayload, "Invalid query parameters.", errs)
		return
	}
	views, err := s.deps.Jobs.Jobs(c.Request.Context(), principal(c).OrganisationID, before, size)
	if err != nil {
		abortWithError(c, err)
		return
	}
	out := make([]jobBody, len(views))
	for i, v := range views {
		out[i] = newJobBody(v)
	}
	if len(views) == size {
		c.Header("Link", fmt.Sprintf(`<%s?page_size=%d&cursor=%d>; rel="next"`, jobsPath, size, views[len(views)-1].ID))
	}
	c.JSON(http.StatusOK, out)
}

// resultOutcomes maps the outcome filter to line outcomes (nil: all).
var resultOutcomes = map[string][]string{
	"all":     nil,
	"failed":  {dataimport.OutcomeInvalid, dataimport.OutcomeFailed},
	"created": {dataimport.OutcomeCreated},
}

// JobResultsCSVHeader is the job results' CSV header. error_code and
// error_attr are the first field error's (the field code, e.g.
// invalid_mpan, that partners sort by), falling back to the envelope code
// for a line without field errors; envelope_code is the line's own code;
// history is the line's earlier outcomes, replaced by a re-run, oldest
// first (historyCell).
var JobResultsCSVHeader = []string{"line", "external_account_number", "outcome", "platform_account_number",
	"error_code", "error_attr", "error_detail", "errors", "envelope_code", "history"}

// jobResults serves GET /jobs/<id>/results/: one line per line of the
// body, streamed from Postgres, as NDJSON or as CSV that opens cleanly in a
// spreadsheet (UTF-8 BOM, CRLF, cells that would start a formula quoted).
func (s *Server) jobResults(c *gin.Context) {
	id, ok := s.jobParam(c)
	if !ok {
		return
	}
	var errs []dataimport.FieldError
	filter := c.DefaultQuery("outcome", "all")
	outcomes, known := resultOutcomes[filter]
	if !known {
		for _, o := range dataimport.JobOutcomes {
			if o == filter {
				outcomes, known = []string{o}, true
			}
		}
	}
	if !known {
		errs = append(errs, dataimport.FieldError{Attr: "outcome", Code: dataimport.CodeInvalidChoice,
			Detail: "outcome must be all, failed, created or one line outcome."})
	}
	format := c.DefaultQuery("format", "ndjson")
	if format != "ndjson" && format != "csv" {
		errs = append(errs, dataimport.FieldError{Attr: "format", Code: dataimport.CodeInvalidChoice, Detail: "format must be ndjson or csv."})
	}
	if len(errs) > 0 {
		failValidation(c, dataimport.CodeInvalidPayload, "Invalid query parameters.", errs)
		return
	}
	ctx := c.Request.Context()
	if _, err := s.deps.Jobs.Job(ctx, principal(c).OrganisationID, id); err != nil {
		abortWithError(c, err)
		return
	}
	w := bufio.NewWriterSize(c.Writer, 32<<10)
	var write func(dataimport.JobRecord) error
	var finish func() error // writes what write holds back
	if format == "csv" {
		cw := startCSV(c, w, fmt.Sprintf("job-%d-%s.csv", id, filter), JobResultsCSVHeader)
		write = func(r dataimport.JobRecord) error {
			code, attr, detail := firstFieldError(r.Code, r.Detail, r.Errors)
			err := cw.Write([]string{strconv.Itoa(r.Line), cell(r.ExternalAccountNumber), r.Outcome, deref(r.PlatformAccountNumber),
				code, cell(attr), cell(detail), cell(joinFieldErrors(r.Errors)), r.Code, cell(historyCell(r.History))})
			cw.Flush()
			return err
		}
	} else {
		c.Header("Content-Type", "application/x-ndjson")
		c.Status(http.StatusOK)
		enc := json.NewEncoder(w)
		// Each created account's landed_digest, read back a batch at a time.
		write, finish = s.withLandedDigests(ctx, func(r jobResult) error { return enc.Encode(r) })
	}
	err := s.deps.Jobs.EachJobRecord(ctx, id, outcomes, write)
	if err == nil && finish != nil {
		err = finish()
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		// The status is sent: the truncated body is all we can do.
		logger(c).WarnContext(ctx, "job results stream stopped", "job_id", id, "err", err.Error())
		c.Abort()
	}
}

// startCSV answers 200 with a CSV download: a spreadsheet-friendly BOM,
// CRLF rows, header first.
func startCSV(c *gin.Context, w *bufio.Writer, filename string, header []string) *csv.Writer {
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", `attachment; filename="`+filename+`"`)
	c.Status(http.StatusOK)
	_, _ = w.WriteString("\ufeff")
	cw := csv.NewWriter(w)
	cw.UseCRLF = true
	_ = cw.Write(header)
	return cw
}

// deref is a CSV cell of a field that may be null: empty.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// cell keeps a spreadsheet from reading partner text as a formula.
func cell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// cancelJob serves POST /jobs/<id>/cancel/: what has not started is
// cancelled, what was created stays; once answered, no account of the job
// is created. Cancelling a finished job changes nothing (200 with it).
func (s *Server) cancelJob(c *gin.Context) {
	id, ok := s.jobParam(c)
	if !ok {
		return
	}
	v, err := s.deps.Jobs.CancelJob(c.Request.Context(), principal(c).OrganisationID, id)
	if err != nil {
		abortWithError(c, err)
		return
	}
	c.JSON(http.StatusOK, newJobBody(v))
}

// idempotencyTTL is how long an Idempotency-Key names its job, as it keeps
// any other request's answer (IDEMPOTENCY_TTL).
func (s *Server) idempotencyTTL() time.Duration {
	if s.cfg.IdempotencyTTL > 0 {
		return s.cfg.IdempotencyTTL
	}
	return DefaultIdempotencyTTL
}

// acceptingSupplier is the supplier an upload names, granted to org and
// taking accounts, with its market's rules; otherwise the refusal is
// answered and ok is false.
func (s *Server) acceptingSupplier(c *gin.Context, org int64, code string) (dataimport.Supplier, dataimport.Market, bool) {
	sup, err := s.deps.Store.SupplierForOrganisation(c.Request.Context(), org, code)
	if err != nil {
		abortWithError(c, err)
		return sup, nil, false
	}
	if !sup.AcceptsAccounts() {
		renderError(c, sup.NotOngoingError())
		return sup, nil, false
	}
	mkt, err := market.For(sup.Market)
	if err != nil {
		abortWithError(c, err)
		return sup, nil, false
	}
	return sup, mkt, true
}
