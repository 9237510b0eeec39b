package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/schollz/progressbar/v3"

	"github.com/gridshift/dataimport/sdk/go"
	sdkclient "github.com/gridshift/dataimport/sdk/go/client"
)

// push --bulk: the file as bulk import jobs (POST /v1/data-import/jobs/),
// each part gzipped on the fly and streamed from disk with a progress bar;
// then the jobs' counters are followed and their failed lines downloaded
// as one report.
//
// The API refuses a job body over MAX_JOB_BYTES (2 GiB by default), and a
// real migration is several times that, so the file is cut at line
// boundaries into parts of at most --job-bytes (uncompressed), one job
// each, uploaded one after another: the worker processes the first parts
// while the next ones upload.
//
// Resumable: a state file beside the report (<report>.job) keeps the parts
// (byte range, first line, Idempotency-Key) and, once a part is accepted,
// its job id. A rerun after Ctrl-C or a crash uploads only the parts
// without a job id, under their saved keys: a part whose upload was cut
// (or whose answer was lost) becomes the same job, never a second one.
//
// Job status and results go through the Go SDK (sdk/go). The uploads are
// sent with net/http and the SDK's token: the SDK's retrying transport
// buffers a body to replay it, and a part may be gigabytes.

// defaultJobBytes leaves room under the API's default MAX_JOB_BYTES (2 GiB).
const defaultJobBytes = 1 << 30

// bulkState is what a rerun needs to resume.
type bulkState struct {
	File     string     `json:"file"`
	Size     int64      `json:"size,omitempty"`      // the file's size when it was split
	JobBytes int64      `json:"job_bytes,omitempty"` // the largest part asked for
	Parts    []bulkPart `json:"parts,omitempty"`

	// A state file written before the file was split: one job for the
	// whole file. Read as a single part (the key was sent with that body).
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	JobID          int64  `json:"job_id,omitempty"`
}

// bulkPart is one job's share of the file: bytes [Start, End), whose first
// line is line FirstLine of the file.
type bulkPart struct {
	Start          int64  `json:"start"`
	End            int64  `json:"end"`
	FirstLine      int64  `json:"first_line"`
	IdempotencyKey string `json:"idempotency_key"`
	JobID          int64  `json:"job_id,omitempty"`
}

func statePath(o pushOptions) string { return o.report + ".job" }

func loadState(path string) (bulkState, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return bulkState{}, false, nil
	}
	if err != nil {
		return bulkState{}, false, fmt.Errorf("read job state: %w", err)
	}
	var s bulkState
	if err := json.Unmarshal(b, &s); err != nil {
		return bulkState{}, false, fmt.Errorf("read job state %s: %w", path, err)
	}
	return s, true, nil
}

func saveState(path string, s bulkState) error {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("write job state: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("write job state: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write job state: %w", err)
	}
	return nil
}

func newIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "migrator-bulk-" + hex.EncodeToString(b[:])
}

// splitFile cuts the file at line boundaries into parts of at most limit
// bytes, reading it through once (never more than a buffer in memory). A
// line longer than limit is a part of its own: the API judges it. Parts of
// blank lines only carry no account and are left out.
func splitFile(path string, limit int64) ([]bulkPart, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("open accounts: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	var parts []bulkPart
	cur := bulkPart{FirstLine: 1}
	var pos, line int64 = 0, 1
	hasData := false
	for {
		n, data, err := skipLine(br)
		if n > 0 {
			if pos > cur.Start && pos+n-cur.Start > limit {
				cur.End = pos
				if hasData {
					parts = append(parts, cur)
				}
				cur, hasData = bulkPart{Start: pos, FirstLine: line}, false
			}
			pos += n
			line++
			hasData = hasData || data
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, fmt.Errorf("read accounts: %w", err)
		}
	}
	cur.End = pos
	if hasData || len(parts) == 0 {
		parts = append(parts, cur)
	}
	for i := range parts {
		parts[i].IdempotencyKey = newIdempotencyKey()
	}
	return parts, pos, nil
}

// skipLine reads past one line (with its newline) and tells its length and
// whether it holds anything but white space.
func skipLine(br *bufio.Reader) (n int64, data bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		n += int64(len(chunk))
		data = data || len(bytes.TrimSpace(chunk)) > 0
		if err == bufio.ErrBufferFull {
			continue
		}
		return n, data, err
	}
}

// bulkPlan loads the run's state, or splits the file and saves a new one.
func (c *cli) bulkPlan(o pushOptions) (bulkState, error) {
	sp := statePath(o)
	st, found, err := loadState(sp)
	if err != nil {
		return st, err
	}
	fi, err := os.Stat(o.file)
	if err != nil {
		return st, fmt.Errorf("open accounts: %w", err)
	}
	if found {
		if st.File != o.file {
			return st, fmt.Errorf("%s belongs to a run of %s; remove it or choose another --report", sp, st.File)
		}
		if len(st.Parts) == 0 { // written before the split: the whole file was one job
			st = bulkState{File: st.File, Size: fi.Size(), JobBytes: max(fi.Size(), 1), Parts: []bulkPart{{End: fi.Size(),
				FirstLine: 1, IdempotencyKey: st.IdempotencyKey, JobID: st.JobID}}}
		}
		if st.Size != fi.Size() {
			return st, fmt.Errorf("%s changed since the run of %s began (%d bytes, now %d); restore it, or remove %s to start over",
				o.file, sp, st.Size, fi.Size(), sp)
		}
		// The keys belong to the parts as cut: another cut would send
		// other bodies under them (refused) or the same lines twice.
		if o.jobBytesSet && st.JobBytes != o.jobBytes {
			return st, fmt.Errorf("%s records a run split into parts of at most %d bytes; resume it without --job-bytes (or with that size), or remove it to start over",
				sp, st.JobBytes)
		}
		return st, nil
	}
	parts, size, err := splitFile(o.file, o.jobBytes)
	if err != nil {
		return st, err
	}
	st = bulkState{File: o.file, Size: size, JobBytes: o.jobBytes, Parts: parts}
	return st, saveState(sp, st)
}

func (c *cli) pushBulk(soft context.Context, o pushOptions) error {
	hard := c.abort
	api, err := sdk.New(c.apiURL, c.apiKey, sdk.Options{Logger: c.log})
	if err != nil {
		return err
	}
	if _, err := api.Token(hard); err != nil {
		return err
	}
	st, err := c.bulkPlan(o)
	if err != nil {
		return err
	}
	sp, n := statePath(o), len(st.Parts)
	var upload *bulkUpload
	for i := range st.Parts {
		p := &st.Parts[i]
		if p.JobID != 0 {
			fmt.Fprintf(c.stdout, "resuming job %d (part %d/%d)\n", p.JobID, i+1, n)
			continue
		}
		if upload == nil {
			if upload, err = c.newBulkUpload(o); err != nil {
				return err
			}
		}
		id, err := upload.send(soft, hard, api, p, fmt.Sprintf("part %d/%d", i+1, n), func() error { return saveState(sp, st) })
		if err != nil {
			return fmt.Errorf("part %d/%d (from line %d): %w", i+1, n, p.FirstLine, err)
		}
		p.JobID = id
		if err := saveState(sp, st); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "job %d accepted (part %d/%d, from line %d, %d bytes)\n", id, i+1, n, p.FirstLine, p.End-p.Start)
	}
	jobs, err := c.followJobs(soft, api, st.Parts)
	if err != nil {
		return err
	}
	if err := c.jobsReport(hard, api, st.Parts, o.report); err != nil {
		return err
	}
	var cn sdkclient.JobCounters
	var unfinished []string
	for _, j := range jobs {
		add(&cn, j.Counters)
		if j.State != sdkclient.JobStateCOMPLETED {
			unfinished = append(unfinished, fmt.Sprintf("job %d ended %s", j.Id, j.State))
		}
	}
	state := string(sdkclient.JobStateCOMPLETED)
	if len(unfinished) > 0 {
		state = "not all COMPLETED"
	}
	fmt.Fprintf(c.stdout, "%s %s: %d lines, %d created, %d already imported, %d staged, %d invalid, %d failed, %d duplicate lines, %d cancelled; report %s\n",
		jobNames(st.Parts), state, cn.Received, cn.Created, cn.AlreadyImported, cn.Staged, cn.Invalid, cn.Failed, cn.DuplicateLine, cn.Cancelled, o.report)
	if len(unfinished) > 0 {
		return errors.New(strings.Join(unfinished, "; "))
	}
	_ = os.Remove(sp) // finished: a rerun starts new jobs
	if cn.Invalid+cn.Failed > 0 {
		return errSomeFailed
	}
	return nil
}

// jobNames is "job 7" or "jobs 7, 8, 9" for the summary.
func jobNames(parts []bulkPart) string {
	if len(parts) == 1 {
		return fmt.Sprintf("job %d", parts[0].JobID)
	}
	ids := make([]string, len(parts))
	for i, p := range parts {
		ids[i] = strconv.FormatInt(p.JobID, 10)
	}
	return "jobs " + strings.Join(ids, ", ")
}

func add(sum *sdkclient.JobCounters, c sdkclient.JobCounters) {
	sum.Received += c.Received
	sum.Pending += c.Pending
	sum.Staged += c.Staged
	sum.InProgress += c.InProgress
	sum.Created += c.Created
	sum.AlreadyImported += c.AlreadyImported
	sum.Invalid += c.Invalid
	sum.Failed += c.Failed
	sum.DuplicateLine += c.DuplicateLine
	sum.Cancelled += c.Cancelled
}

// supplierOf reads the import_supplier of the file's first account.
func supplierOf(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("open accounts: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	for {
		line, _, err := readLine(br)
		if len(strings.TrimSpace(string(line))) > 0 {
			var a struct {
				ImportSupplier string `json:"import_supplier"`
			}
			if json.Unmarshal(line, &a) == nil && a.ImportSupplier != "" {
				return a.ImportSupplier, nil
			}
		}
		if err != nil {
			return "", errors.New("no account line names its import_supplier; give --supplier")
		}
	}
}

// bulkUpload sends parts of the file as jobs, all with the same query.
type bulkUpload struct {
	c          *cli
	file       string
	target     string
	state      string        // the state file, for the hint of a refusal
	pausedWait time.Duration // how long a part waits out a Paused supplier
}

func (c *cli) newBulkUpload(o pushOptions) (*bulkUpload, error) {
	supplier := o.supplier
	if supplier == "" {
		var err error
		if supplier, err = supplierOf(o.file); err != nil {
			return nil, err
		}
	}
	q := url.Values{"import_supplier": {supplier}, "operations_team_name": {o.team}}
	if o.dryRun {
		q.Set("dry_run", "true")
	}
	return &bulkUpload{c: c, file: o.file, target: c.apiURL + "/v1/data-import/jobs/?" + q.Encode(), state: statePath(o),
		pausedWait: o.pausedWait}, nil
}

// Upload retries: exponential backoff from uploadRetryBase, at most
// maxUploadAttempts tries of one part.
var (
	uploadRetryBase   = time.Second
	maxUploadAttempts = 20
)

// errUploadCut is a try whose connection failed: the API may have received
// part of the body (the job then fails upload_lost and the same key resumes it).
var errUploadCut = errors.New("upload cut")

// errKeyReused is a 422 idempotency_key_reused.
var errKeyReused = errors.New("idempotency key refused")

// retryAfter is a retryable answer that asked for a wait (Retry-After).
type retryAfter struct {
	wait time.Duration
	err  error
}

func (e *retryAfter) Error() string { return e.err.Error() }
func (e *retryAfter) Unwrap() error { return e.err }

// floorBackOff waits at least floor (then forgets it) before the next try.
type floorBackOff struct {
	backoff.BackOff
	floor time.Duration
}

func (f *floorBackOff) NextBackOff() time.Duration {
	d := f.BackOff.NextBackOff()
	if d != backoff.Stop && d < f.floor {
		d = f.floor
	}
	f.floor = 0
	return d
}

// send uploads one part, gzipped as it is read, and returns its job id.
// Cut connections, 409 (the cut upload is not known lost yet; its
// Retry-After is waited), 429 and 5xx are retried with exponential backoff
// under the part's Idempotency-Key: the API gives the same job back, or
// resumes the cut upload in it. A graceful stop lets the upload in flight
// finish, then starts no other try.
//
// An API from before upload_lost failed a cut upload as a parse error and
// then refused its key (422 idempotency_key_reused, "another body") though
// the part is byte for byte the same: after a cut, that 422 means the job
// kept nothing, so the part gets a new key (saved first) and goes again.
func (u *bulkUpload) send(soft, hard context.Context, api *sdk.Client, p *bulkPart, name string, save func() error) (int64, error) {
	type answer struct {
		id  int64
		err error
	}
	a := whilePaused(soft, nil, u.c.log, u.pausedWait, func(a answer) bool { return errors.Is(a.err, errSupplierPaused) }, func() answer {
		id, err := u.sendTries(soft, hard, api, p, name, save)
		return answer{id, err}
	})
	return a.id, a.err
}

// sendTries is send's tries against transient trouble.
func (u *bulkUpload) sendTries(soft, hard context.Context, api *sdk.Client, p *bulkPart, name string, save func() error) (int64, error) {
	exp := backoff.NewExponentialBackOff()
	exp.InitialInterval, exp.MaxInterval, exp.MaxElapsedTime = uploadRetryBase, 30*time.Second, 0
	b := &floorBackOff{BackOff: backoff.WithContext(backoff.WithMaxRetries(exp, uint64(maxUploadAttempts-1)), soft)}
	cut, attempt := false, 0
	var id int64
	op := func() error {
		if soft.Err() != nil {
			return backoff.Permanent(errInterrupted)
		}
		attempt++
		var err error
		id, err = u.once(hard, api, *p, name)
		var ra *retryAfter
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errKeyReused) && cut:
			p.IdempotencyKey = newIdempotencyKey()
			if serr := save(); serr != nil {
				return backoff.Permanent(serr)
			}
			cut = false
			return err
		case errors.Is(err, errUploadCut):
			cut = true
			return err
		case errors.As(err, &ra):
			b.floor = ra.wait
			return err
		}
		return backoff.Permanent(err)
	}
	notify := func(err error, in time.Duration) {
		u.c.log.Warn("upload not accepted; retrying with the same Idempotency-Key", "part", name, "attempt", attempt, "in", in, "err", err)
	}
	if err := backoff.RetryNotify(op, b, notify); err != nil {
		if soft.Err() != nil || errors.Is(err, errInterrupted) {
			return 0, errInterrupted
		}
		if errors.Is(err, errUploadCut) || errors.As(err, new(*retryAfter)) {
			return 0, fmt.Errorf("%w (gave up after %d tries; rerun to resume)", err, attempt)
		}
		return 0, err
	}
	return id, nil
}

// once makes one try. Its error wraps errUploadCut, errKeyReused or
// *retryAfter when another try may succeed.
func (u *bulkUpload) once(ctx context.Context, api *sdk.Client, p bulkPart, name string) (int64, error) {
	c := u.c
	f, err := os.Open(u.file)
	if err != nil {
		return 0, fmt.Errorf("open accounts: %w", err)
	}
	defer f.Close()
	part := io.NewSectionReader(f, p.Start, p.End-p.Start)
	var pb *progressbar.ProgressBar
	if !c.quiet && c.stderrTTY {
		pb = progressbar.DefaultBytes(part.Size(), "uploading "+name)
		defer func() { _ = pb.Exit() }()
	}
	pr, pw := io.Pipe()
	go func() {
		zw, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
		var src io.Reader = part
		if pb != nil {
			src = io.TeeReader(part, pb)
		}
		_, err := io.Copy(zw, src)
		if err == nil {
			err = zw.Close()
		}
		_ = pw.CloseWithError(err)
	}()
	token, err := api.Token(ctx)
	if err != nil {
		_ = pr.Close()
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.target, pr)
	if err != nil {
		_ = pr.Close()
		return 0, fmt.Errorf("upload: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("Content-Encoding", "gzip")
	req.Header.Set("Authorization", "Token "+token)
	req.Header.Set(sdk.IdempotencyKeyHeader, p.IdempotencyKey)
	resp, err := http.DefaultClient.Do(req)
	_ = pr.Close()
	if err != nil {
		if ctx.Err() != nil {
			return 0, errInterrupted
		}
		return 0, fmt.Errorf("upload: %w: %w", errUploadCut, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil { // the answer was cut: a retry gets it again
		return 0, fmt.Errorf("upload: reading the answer: %w: %w", errUploadCut, err)
	}
	switch {
	case resp.StatusCode == http.StatusAccepted:
		var out struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(body, &out); err != nil || out.ID == 0 {
			return 0, fmt.Errorf("upload: unexpected answer %s", clip(string(body), 200))
		}
		return out.ID, nil
	case resp.StatusCode == http.StatusConflict || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		var wait time.Duration
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			wait = time.Duration(s) * time.Second
		}
		return 0, &retryAfter{wait: wait, err: fmt.Errorf("upload: %d %s", resp.StatusCode, clip(string(body), 200))}
	case resp.StatusCode == http.StatusUnprocessableEntity && bytes.Contains(body, []byte(`"idempotency_key_reused"`)):
		return 0, fmt.Errorf("upload refused: %w: %d %s", errKeyReused, resp.StatusCode, clip(string(body), 500))
	case resp.StatusCode == http.StatusBadRequest && pausedBody(body):
		return 0, fmt.Errorf("upload refused: %w: %s", errSupplierPaused, clip(string(body), 500))
	case resp.StatusCode == http.StatusRequestEntityTooLarge:
		return 0, fmt.Errorf("upload refused: %d %s (the API takes less per job than this part: remove %s and rerun with a smaller --job-bytes; parts already accepted are then sent again and come back already_imported)",
			resp.StatusCode, clip(string(body), 500), u.state)
	}
	return 0, fmt.Errorf("upload refused: %d %s", resp.StatusCode, clip(string(body), 500))
}

// followJobs polls the jobs' status with one bar over all their lines
// until every job is finished; Ctrl-C stops following (the jobs go on; a
// rerun resumes).
func (c *cli) followJobs(soft context.Context, api *sdk.Client, parts []bulkPart) ([]*sdkclient.Job, error) {
	var pb *progressbar.ProgressBar
	defer func() {
		if pb != nil {
			_ = pb.Exit()
			fmt.Fprintln(c.stderr)
		}
	}()
	jobs := make([]*sdkclient.Job, len(parts))
	for {
		var total, done int64
		finished := 0
		for i, p := range parts {
			if j := jobs[i]; j != nil && finishedJob(j.State) {
				finished++
				total += int64(j.Counters.Received)
				done += int64(j.Counters.Received)
				continue
			}
			resp, err := api.GetJobWithResponse(soft, strconv.FormatInt(p.JobID, 10))
			switch {
			case soft.Err() != nil:
				return nil, errInterrupted
			case err != nil:
				return nil, fmt.Errorf("job %d: %w", p.JobID, err)
			case resp.JSON200 == nil:
				return nil, fmt.Errorf("job %d: %d %s", p.JobID, resp.StatusCode(), clip(string(resp.Body), 300))
			}
			j := resp.JSON200
			jobs[i] = j
			cn := j.Counters
			d := cn.Received - cn.Pending - cn.InProgress
			if j.Create && !j.DryRun {
				d -= cn.Staged
			}
			total += int64(cn.Received)
			done += int64(d)
			if finishedJob(j.State) {
				finished++
			}
		}
		if pb == nil && !c.quiet && c.stderrTTY && total > 0 {
			desc := fmt.Sprintf("job %d", parts[0].JobID)
			if len(parts) > 1 {
				desc = fmt.Sprintf("%d jobs", len(parts))
			}
			pb = progressbar.NewOptions64(total, progressbar.OptionSetWriter(c.stderr),
				progressbar.OptionSetDescription(desc), progressbar.OptionShowCount(),
				progressbar.OptionShowIts(), progressbar.OptionSetItsString("acc"), progressbar.OptionSetPredictTime(true),
				progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionSetWidth(30))
		}
		if pb != nil {
			_ = pb.Set64(done)
		}
		if finished == len(parts) {
			return jobs, nil
		}
		select {
		case <-soft.Done():
			return nil, errInterrupted
		case <-time.After(time.Second):
		}
	}
}

func finishedJob(s sdkclient.JobState) bool {
	switch s {
	case sdkclient.JobStateCOMPLETED, sdkclient.JobStateFAILED, sdkclient.JobStateCANCELLED:
		return true
	}
	return false
}

// jobsReport writes the failed lines of every job, in the file's order,
// into one report.
func (c *cli) jobsReport(ctx context.Context, api *sdk.Client, parts []bulkPart, path string) error {
	rep, err := createReport(path)
	if err != nil {
		return err
	}
	for _, p := range parts {
		if err := c.jobReport(ctx, api, p, rep); err != nil {
			_ = rep.close()
			return err
		}
	}
	return rep.close()
}

// jobReport writes a job's failed lines (invalid or failed), one row per
// field error, as the per-account push writes them; a line's number in its
// job is turned into its number in the whole file.
func (c *cli) jobReport(ctx context.Context, api *sdk.Client, p bulkPart, rep *reportWriter) error {
	id := p.JobID
	outcome, format := sdkclient.GetJobResultsParamsOutcome("failed"), sdkclient.GetJobResultsParamsFormat("ndjson")
	resp, err := api.GetJobResults(ctx, strconv.FormatInt(id, 10), &sdkclient.GetJobResultsParams{Outcome: &outcome, Format: &format})
	if err != nil {
		return fmt.Errorf("job %d results: %w", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("job %d results: %d %s", id, resp.StatusCode, clip(string(b), 300))
	}
	dec := json.NewDecoder(bufio.NewReaderSize(resp.Body, 256<<10))
	for dec.More() {
		var l struct {
			Line     int64  `json:"line"`
			External string `json:"external_account_number"`
			Outcome  string `json:"outcome"`
			Platform string `json:"platform_account_number"`
			Code     string `json:"code"`
			Detail   string `json:"detail"`
			Errors   []struct{ Attr, Code, Detail string }
		}
		if err := dec.Decode(&l); err != nil {
			return fmt.Errorf("job %d results: %w", id, err)
		}
		ext := l.External
		if ext == "" {
			ext = fmt.Sprintf("line %d", p.FirstLine+l.Line-1)
		}
		rows := []row{{External: ext, Outcome: l.Outcome, Platform: l.Platform, Code: l.Code, Detail: l.Detail}}
		if len(l.Errors) > 0 {
			rows = rows[:0]
			for _, e := range l.Errors {
				rows = append(rows, row{External: ext, Outcome: l.Outcome, Code: e.Code, Attr: e.Attr, Detail: e.Detail})
			}
		}
		if err := rep.write(rows); err != nil {
			return err
		}
	}
	return nil
}

// clip shortens s to at most n bytes for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
