package sdk

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gridshift/dataimport/sdk/go/client"
)

// JobOptions tune UploadJob; the zero value creates every valid account.
type JobOptions struct {
	// StageOnly stages the lines without creating the accounts (create=false).
	StageOnly bool
	// DryRun creates each account and rolls it back.
	DryRun bool
	// ScheduleWindowStart and ScheduleWindowEnd, when set, hold creation
	// to that window (v2 rules).
	ScheduleWindowStart, ScheduleWindowEnd *time.Time
	// Gzip compresses the body on the fly (Content-Encoding: gzip).
	Gzip bool
	// IdempotencyKey is sent with every try of the upload; empty: a new
	// UUID. Keep it (with the same body) to resume an upload after a crash:
	// the API answers with the same job.
	IdempotencyKey string
	// OnProgress is called as the body is read for sending, with the bytes
	// of NDJSON read so far and the total (-1 when unknown). A retry starts
	// again from 0.
	OnProgress func(sent, total int64)
}

// UploadJob uploads NDJSON accounts (one account object per line) from body
// as a bulk job for supplier, created in team, and returns once the API has
// stored the whole body (202). The body is streamed, never held in memory:
// an io.ReadSeeker (an *os.File) is rewound for a retry; any other reader
// is first copied to a temporary file, so a retry can send it again.
func (c *Client) UploadJob(ctx context.Context, supplier, team string, body io.Reader, opts JobOptions) (*client.JobAccepted, error) {
	src, size, cleanup, err := replayable(body)
	if err != nil {
		return nil, fmt.Errorf("sdk: upload job: %w", err)
	}
	defer cleanup()
	params := &client.CreateJobParams{ImportSupplier: supplier}
	if team != "" {
		params.OperationsTeamName = &team
	}
	if opts.StageOnly {
		v := client.CreateJobParamsCreate("false")
		params.Create = &v
	}
	if opts.DryRun {
		v := client.CreateJobParamsDryRun("true")
		params.DryRun = &v
	}
	if opts.ScheduleWindowStart != nil {
		v := opts.ScheduleWindowStart.UTC().Truncate(time.Second) // the API's one form
		params.ScheduleWindowStart = &v
	}
	if opts.ScheduleWindowEnd != nil {
		v := opts.ScheduleWindowEnd.UTC().Truncate(time.Second)
		params.ScheduleWindowEnd = &v
	}
	if opts.IdempotencyKey != "" {
		params.IdempotencyKey = &opts.IdempotencyKey
	}
	// Each try reads the body from its start through a reader of its own
	// (the retrying layer calls GetBody for every try, so nothing is
	// buffered, and a try that failed cannot disturb the next); gzip starts
	// on the first read, so a body opened and never sent costs nothing.
	getBody := func() (io.ReadCloser, error) {
		var r io.Reader = &progressReader{r: io.NewSectionReader(src, 0, size), total: size, on: opts.OnProgress}
		if !opts.Gzip {
			return io.NopCloser(r), nil
		}
		return &lazyGzip{src: r}, nil
	}
	stream := func(_ context.Context, req *http.Request) error {
		req.Body, req.GetBody = http.NoBody, getBody
		req.ContentLength = -1
		if !opts.Gzip {
			req.ContentLength = size
		} else {
			req.Header.Set("Content-Encoding", "gzip")
		}
		return nil
	}
	resp, err := c.CreateJobWithBodyWithResponse(ctx, params, "application/x-ndjson", http.NoBody, stream)
	if err != nil {
		return nil, fmt.Errorf("sdk: upload job: %w", err)
	}
	if err := check(resp.HTTPResponse, resp.Body); err != nil {
		return nil, err
	}
	if resp.JSON202 == nil {
		return nil, fmt.Errorf("sdk: upload job: unexpected answer %d", resp.StatusCode())
	}
	return resp.JSON202, nil
}

// replayable gives a source each try can read from its start on its own,
// and its size: body itself when it reads at offsets (an *os.File, a
// *bytes.Reader), else a temporary file it is copied to.
func replayable(body io.Reader) (io.ReaderAt, int64, func(), error) {
	if ra, ok := body.(interface {
		io.ReaderAt
		io.Seeker
	}); ok {
		start, err := ra.Seek(0, io.SeekCurrent)
		if err == nil {
			end, err := ra.Seek(0, io.SeekEnd)
			if err == nil {
				return io.NewSectionReader(ra, start, end-start), end - start, func() {}, nil
			}
		}
	}
	f, err := os.CreateTemp("", "dataimport-job-*.ndjson")
	if err != nil {
		return nil, 0, nil, err
	}
	cleanup := func() { _ = f.Close(); _ = os.Remove(f.Name()) }
	n, err := io.Copy(f, body)
	if err != nil {
		cleanup()
		return nil, 0, nil, fmt.Errorf("spool body: %w", err)
	}
	return f, n, cleanup, nil
}

// lazyGzip compresses src as it is read, through a pipe whose writer
// starts on the first Read; Close stops it.
type lazyGzip struct {
	src  io.Reader
	once sync.Once
	pr   *io.PipeReader
}

func (z *lazyGzip) start() {
	pr, pw := io.Pipe()
	z.pr = pr
	go func() {
		zw := gzip.NewWriter(pw)
		_, err := io.Copy(zw, z.src)
		if err == nil {
			err = zw.Close()
		}
		pw.CloseWithError(err)
	}()
}

func (z *lazyGzip) Read(p []byte) (int, error) {
	z.once.Do(z.start)
	if z.pr == nil { // closed before any read
		return 0, io.ErrClosedPipe
	}
	return z.pr.Read(p)
}

func (z *lazyGzip) Close() error {
	z.once.Do(func() {}) // never started: nothing to stop
	if z.pr != nil {
		return z.pr.Close()
	}
	return nil
}

type progressReader struct {
	r     io.Reader
	total int64
	sent  atomic.Int64
	on    func(sent, total int64)
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 && p.on != nil {
		p.on(p.sent.Add(int64(n)), p.total)
	}
	return n, err
}

// Job reads a job's state and counters.
func (c *Client) Job(ctx context.Context, id int) (*client.Job, error) {
	resp, err := c.GetJobWithResponse(ctx, strconv.Itoa(id))
	if err != nil {
		return nil, err
	}
	if err := check(resp.HTTPResponse, resp.Body); err != nil {
		return nil, err
	}
	return resp.JSON200, nil
}

// CancelJob stops a job's lines not yet started (what was created stays).
func (c *Client) CancelJob(ctx context.Context, id int) (*client.Job, error) {
	resp, err := c.CancelJobWithResponse(ctx, strconv.Itoa(id), nil)
	if err != nil {
		return nil, err
	}
	if err := check(resp.HTTPResponse, resp.Body); err != nil {
		return nil, err
	}
	return resp.JSON200, nil
}

// RetryJob re-runs the job's failed lines whose field errors match code
// and attr (empty: any), once what made them fail was fixed elsewhere, and
// returns how many went back to run. Follow them with WaitJob.
func (c *Client) RetryJob(ctx context.Context, id int, code, attr string) (int, error) {
	params := &client.RetryJobParams{}
	if code != "" {
		params.Code = &code
	}
	if attr != "" {
		params.Attr = &attr
	}
	resp, err := c.RetryJobWithResponse(ctx, strconv.Itoa(id), params)
	if err != nil {
		return 0, err
	}
	if err := check(resp.HTTPResponse, resp.Body); err != nil {
		return 0, err
	}
	return resp.JSON202.Retried, nil
}

// JobFinished tells whether a job's state is final.
func JobFinished(s client.JobState) bool {
	return s == client.JobStateCOMPLETED || s == client.JobStateFAILED || s == client.JobStateCANCELLED
}

// WaitJob polls the job every interval (0: one second), calling onUpdate
// (when set) with each reading, until its state is final (COMPLETED,
// FAILED or CANCELLED) or ctx ends.
func (c *Client) WaitJob(ctx context.Context, id int, interval time.Duration, onUpdate func(*client.Job)) (*client.Job, error) {
	if interval <= 0 {
		interval = time.Second
	}
	for {
		j, err := c.Job(ctx, id)
		if err != nil {
			return nil, err
		}
		if onUpdate != nil {
			onUpdate(j)
		}
		if JobFinished(j.State) {
			return j, nil
		}
		select {
		case <-ctx.Done():
			return j, context.Cause(ctx)
		case <-time.After(interval):
		}
	}
}

// JobResult is one line's outcome in a job's results.
type JobResult struct {
	Line                  int    `json:"line"`
	ExternalAccountNumber string `json:"external_account_number"`
	// Outcome: invalid, duplicate_line, staged, created, already_imported,
	// failed, cancelled, or pending / in_progress while processing.
	Outcome               string              `json:"outcome"`
	PlatformAccountNumber *string             `json:"platform_account_number"`
	Code                  string              `json:"code,omitempty"`
	Detail                string              `json:"detail,omitempty"`
	Errors                []client.FieldError `json:"errors,omitempty"`
}

// JobResults streams a job's per-line results, in line order; outcome
// filters them ("" or "all": every line; "failed": invalid or failed;
// or one outcome). The iteration ends with a non-nil error when the
// download fails.
func (c *Client) JobResults(ctx context.Context, id int, outcome string) iter.Seq2[JobResult, error] {
	return func(yield func(JobResult, error) bool) {
		params := &client.GetJobResultsParams{}
		if outcome != "" {
			o := client.GetJobResultsParamsOutcome(outcome)
			params.Outcome = &o
		}
		// The raw response: the results are streamed, not read whole.
		resp, err := c.GetJobResults(ctx, strconv.Itoa(id), params)
		if err != nil {
			yield(JobResult{}, err)
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			yield(JobResult{}, NewAPIError(resp, b))
			return
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			if len(sc.Bytes()) == 0 {
				continue
			}
			var r JobResult
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				yield(JobResult{}, fmt.Errorf("sdk: job %d results: %w", id, err))
				return
			}
			if !yield(r, nil) {
				return
			}
		}
		if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
			yield(JobResult{}, fmt.Errorf("sdk: job %d results: %w", id, err))
		}
	}
}
