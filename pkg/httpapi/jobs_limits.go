package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Bounds on bulk uploads. An upload is untrusted I/O that runs for minutes:
// it must not hold shared resources while the partner is slow (or silent),
// and a small body must not turn into a large job.

// UploadLimits are the upload settings of pkg/config.
type UploadLimits struct {
	IdleTimeout      time.Duration // UPLOAD_IDLE_TIMEOUT: longest wait for the next body bytes (408)
	PerOrg           int           // MAX_UPLOADS_PER_ORG: uploads at once per organisation, all replicas (429)
	PerReplica       int           // MAX_UPLOADS_PER_REPLICA: uploads at once in this process (429)
	MaxLines         int64         // MAX_JOB_LINES: lines per job, blank ones included (413)
	InvalidAfter     int64         // JOB_INVALID_CHECK_AFTER: lines received before the invalid ratio is checked
	MaxInvalidRatio  float64       // MAX_JOB_INVALID_RATIO: invalid lines / lines past which the job stops (400)
	MaxGzipRatio     float64       // MAX_GZIP_RATIO: decompressed / compressed bytes, past GzipRatioFloor (413)
	RetryAfter       time.Duration // Retry-After of the 429s
	GzipRatioFloorFn func() int64  // tests only: the floor; nil: GzipRatioFloor
}

// GzipRatioFloor is how many decompressed bytes may come out before the
// inflation ratio is checked: gzip's own overhead makes a tiny body's
// ratio meaningless.
const GzipRatioFloor = 1 << 20

// Defaults, as pkg/config sets them.
const (
	DefaultUploadIdleTimeout = 30 * time.Second
	DefaultMaxUploadsPerOrg  = 4
	DefaultMaxUploadsReplica = 16
	DefaultMaxJobLines       = 5_000_000
	DefaultInvalidAfter      = 1000
	DefaultMaxInvalidRatio   = 0.5
	DefaultMaxGzipRatio      = 500
)

func (l UploadLimits) withDefaults() UploadLimits {
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultUploadIdleTimeout
	}
	if l.PerOrg <= 0 {
		l.PerOrg = DefaultMaxUploadsPerOrg
	}
	if l.PerReplica <= 0 {
		l.PerReplica = DefaultMaxUploadsReplica
	}
	if l.MaxLines <= 0 {
		l.MaxLines = DefaultMaxJobLines
	}
	if l.InvalidAfter <= 0 {
		l.InvalidAfter = DefaultInvalidAfter
	}
	if l.MaxInvalidRatio <= 0 {
		l.MaxInvalidRatio = DefaultMaxInvalidRatio
	}
	if l.MaxGzipRatio <= 0 {
		l.MaxGzipRatio = DefaultMaxGzipRatio
	}
	if l.RetryAfter <= 0 {
		l.RetryAfter = 10 * time.Second
	}
	return l
}

func (l UploadLimits) gzipFloor() int64 {
	if l.GzipRatioFloorFn != nil {
		return l.GzipRatioFloorFn()
	}
	return GzipRatioFloor
}

// UploadSlots leases an organisation's upload slots across replicas
// (pkg/redis.UploadSlots).
type UploadSlots interface {
	Acquire(ctx context.Context, org int64, max int) (release func(), ok bool, err error)
}

// Error codes of the upload bounds.
const (
	CodeUploadIdleTimeout        = dataimport.CodeUploadIdleTimeout
	CodeTooManyUploads           = "too_many_uploads"
	CodeTooManyLines             = "too_many_lines"
	CodeJobMostlyInvalid         = "job_mostly_invalid"
	CodeCompressionRatioExceeded = "compression_ratio_exceeded"
)

func init() {
	statusByCode[CodeUploadIdleTimeout] = http.StatusRequestTimeout
	statusByCode[CodeTooManyUploads] = http.StatusTooManyRequests
	statusByCode[CodeTooManyLines] = http.StatusRequestEntityTooLarge
	statusByCode[CodeCompressionRatioExceeded] = http.StatusRequestEntityTooLarge
}

// takeUploadSlots takes this replica's slot, then the organisation's; ok
// false means the answer (429) is rendered. A Redis outage does not stop
// uploads: the replica's bound still holds, and it is logged.
func (s *Server) takeUploadSlots(c *gin.Context, org int64) (release func(), ok bool) {
	lim := s.cfg.Uploads
	busy := func(detail string) {
		renderError(c, &dataimport.Error{Code: CodeTooManyUploads, Detail: detail, RetryAfterSeconds: int(lim.RetryAfter / time.Second)})
	}
	select {
	case s.uploads <- struct{}{}:
	default:
		busy("This server is receiving as many uploads as it may; retry shortly.")
		return nil, false
	}
	freeReplica := func() { <-s.uploads }
	if s.deps.UploadSlots == nil {
		return freeReplica, true
	}
	freeOrg, got, err := s.deps.UploadSlots.Acquire(c.Request.Context(), org, lim.PerOrg)
	if err != nil {
		logger(c).WarnContext(c.Request.Context(), "upload slots unavailable; the organisation's bound is not applied", "err", err.Error())
		return freeReplica, true
	}
	if !got {
		freeReplica()
		busy("Your organisation already has the most uploads in progress at once that it may (MAX_UPLOADS_PER_ORG); retry when one has finished.")
		return nil, false
	}
	return func() { freeOrg(); freeReplica() }, true
}

// idleReader renews the connection's read deadline before every read of
// the body, so a partner that stops sending is cut off after the idle
// timeout instead of holding the request (and what it holds) for ever.
type idleReader struct {
	r        io.Reader
	rc       *http.ResponseController
	idle     time.Duration
	timedOut bool
}

func (r *idleReader) Read(p []byte) (int, error) {
	// Not every writer supports deadlines (a test recorder): then only the
	// server's own timeouts apply.
	_ = r.rc.SetReadDeadline(time.Now().Add(r.idle))
	n, err := r.r.Read(p)
	switch {
	case errors.Is(err, io.EOF):
		// The body is in: net/http now reads the connection in the
		// background to notice a hang-up, and a deadline left set would
		// cancel the request while its last batch commits.
		_ = r.rc.SetReadDeadline(time.Time{})
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		r.timedOut = true
	}
	return n, err
}

// errCompressionRatio ends a gzip body that inflates too much.
var errCompressionRatio = errors.New("gzip body inflates past MAX_GZIP_RATIO")

// ratioReader fails once the decompressed bytes exceed ratio times the
// compressed bytes read so far (past floor decompressed bytes): a 429-byte
// body that inflates to hundreds of megabytes of lines is refused early.
type ratioReader struct {
	r          io.Reader
	compressed func() int64
	out, floor int64
	ratio      float64
}

func (r *ratioReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.out += int64(n)
	if r.out > r.floor && float64(r.out) > r.ratio*float64(max(r.compressed(), 1)) {
		return n, errCompressionRatio
	}
	return n, err
}

func tooManyLines(max int64) *dataimport.Error {
	return dataimport.Errorf(CodeTooManyLines, "The upload has more than the limit of %d lines (MAX_JOB_LINES); split it into several jobs.", max)
}

func mostlyInvalid(invalid, received int64) *dataimport.Error {
	return dataimport.Errorf(CodeJobMostlyInvalid,
		"%d of the %d lines received are invalid: the job stopped receiving. Its results list the lines received; fix the file and upload it again.",
		invalid, received)
}

func compressionRatioExceeded(ratio float64) *dataimport.Error {
	return dataimport.Errorf(CodeCompressionRatioExceeded,
		"The gzip body inflates more than %g times (MAX_GZIP_RATIO); send it uncompressed or less repetitive.", ratio)
}

func uploadIdleTimeout(idle time.Duration, keyed bool) *dataimport.Error {
	d := "No body bytes arrived for %s: the upload was cut off and nothing of it was kept. Upload it again."
	if keyed {
		d = "No body bytes arrived for %s: the upload was cut off. Retry with the same Idempotency-Key to upload it again."
	}
	return dataimport.Errorf(CodeUploadIdleTimeout, d, idle)
}
