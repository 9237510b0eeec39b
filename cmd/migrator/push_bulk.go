package main

import (
	"bufio"
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

	"github.com/schollz/progressbar/v3"

	"github.com/gridshift/dataimport/sdk/go"
	sdkclient "github.com/gridshift/dataimport/sdk/go/client"
)

// push --bulk: the whole file as one bulk import job (POST
// /v1/data-import/jobs/), gzipped on the fly and streamed from disk with a
// progress bar; then the job's counters are followed and its failed lines
// downloaded as the report.
//
// Resumable: a state file beside the report (<report>.job) keeps the job's
// Idempotency-Key and, once the upload is accepted, its id. A rerun after
// Ctrl-C or a crash follows that job instead of uploading again; a rerun of
// an upload that was cut sends the file again with the same key, which the
// API turns into the same job (never a second one).
//
// Job status and results go through the Go SDK (sdk/go). The upload itself
// is sent with net/http and the SDK's token: the SDK's retrying transport
// buffers a body to replay it, and a migration file may be gigabytes.

// bulkState is what a rerun needs to resume.
type bulkState struct {
	File           string `json:"file"`
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

func (c *cli) pushBulk(soft context.Context, o pushOptions) error {
	hard := c.abort
	api, err := sdk.New(c.apiURL, c.apiKey, sdk.Options{Logger: c.log})
	if err != nil {
		return err
	}
	if _, err := api.Token(hard); err != nil {
		return err
	}
	sp := statePath(o)
	st, found, err := loadState(sp)
	if err != nil {
		return err
	}
	if found && st.File != o.file {
		return fmt.Errorf("%s belongs to a run of %s; remove it or choose another --report", sp, st.File)
	}
	if !found {
		var b [16]byte
		_, _ = rand.Read(b[:])
		st = bulkState{File: o.file, IdempotencyKey: "migrator-bulk-" + hex.EncodeToString(b[:])}
		if err := saveState(sp, st); err != nil {
			return err
		}
	}
	if st.JobID == 0 {
		id, err := c.uploadJob(soft, hard, api, o, st.IdempotencyKey)
		if err != nil {
			return err
		}
		st.JobID = id
		if err := saveState(sp, st); err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "job %d accepted\n", id)
	} else {
		fmt.Fprintf(c.stdout, "resuming job %d\n", st.JobID)
	}
	job, err := c.followJob(soft, api, st.JobID)
	if err != nil {
		return err
	}
	if err := c.jobReport(hard, api, st.JobID, o.report); err != nil {
		return err
	}
	cn := job.Counters
	fmt.Fprintf(c.stdout, "job %d %s: %d lines, %d created, %d already imported, %d staged, %d invalid, %d failed, %d duplicate lines, %d cancelled; report %s\n",
		job.Id, job.State, cn.Received, cn.Created, cn.AlreadyImported, cn.Staged, cn.Invalid, cn.Failed, cn.DuplicateLine, cn.Cancelled, o.report)
	if job.State != sdkclient.JobStateCOMPLETED {
		return fmt.Errorf("job %d ended %s", job.Id, job.State)
	}
	_ = os.Remove(sp) // finished: a rerun starts a new job
	if cn.Invalid+cn.Failed > 0 {
		return errSomeFailed
	}
	return nil
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

// uploadJob sends the file, gzipped as it is read, and returns the job id.
// Network errors and 5xx are retried with the same Idempotency-Key (the
// API gives the same job, or takes over the cut upload); 409 (the cut
// upload is not known dead yet) waits Retry-After.
func (c *cli) uploadJob(soft, hard context.Context, api *sdk.Client, o pushOptions, key string) (int64, error) {
	supplier := o.supplier
	if supplier == "" {
		var err error
		if supplier, err = supplierOf(o.file); err != nil {
			return 0, err
		}
	}
	q := url.Values{"import_supplier": {supplier}, "operations_team_name": {o.team}}
	if o.dryRun {
		q.Set("dry_run", "true")
	}
	target := c.apiURL + "/v1/data-import/jobs/?" + q.Encode()
	for attempt := 1; ; attempt++ {
		if soft.Err() != nil {
			return 0, errInterrupted
		}
		id, retryIn, err := c.uploadOnce(hard, api, o.file, target, key)
		if err == nil {
			return id, nil
		}
		if retryIn < 0 || attempt >= 20 {
			return 0, err
		}
		c.log.Warn("upload not accepted; retrying with the same Idempotency-Key", "attempt", attempt, "in", retryIn, "err", err)
		select {
		case <-soft.Done():
			return 0, errInterrupted
		case <-time.After(retryIn):
		}
	}
}

// uploadOnce makes one try; retryIn < 0 means the error is final.
func (c *cli) uploadOnce(ctx context.Context, api *sdk.Client, path, target, key string) (int64, time.Duration, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, -1, fmt.Errorf("open accounts: %w", err)
	}
	defer f.Close()
	size := int64(-1)
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	var pb *progressbar.ProgressBar
	if !c.quiet && c.stderrTTY {
		pb = progressbar.DefaultBytes(size, "uploading")
		defer func() { _ = pb.Exit() }()
	}
	pr, pw := io.Pipe()
	go func() {
		zw, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
		var src io.Reader = f
		if pb != nil {
			src = io.TeeReader(f, pb)
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
		return 0, -1, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, pr)
	if err != nil {
		_ = pr.Close()
		return 0, -1, fmt.Errorf("upload: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("Content-Encoding", "gzip")
	req.Header.Set("Authorization", "Token "+token)
	req.Header.Set(sdk.IdempotencyKeyHeader, key)
	resp, err := http.DefaultClient.Do(req)
	_ = pr.Close()
	if err != nil {
		if ctx.Err() != nil {
			return 0, -1, errInterrupted
		}
		return 0, 2 * time.Second, fmt.Errorf("upload: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	switch {
	case resp.StatusCode == http.StatusAccepted:
		var out struct {
			ID int64 `json:"id"`
		}
		if err := json.Unmarshal(body, &out); err != nil || out.ID == 0 {
			return 0, -1, fmt.Errorf("upload: unexpected answer %s", clip(string(body), 200))
		}
		return out.ID, 0, nil
	case resp.StatusCode == http.StatusConflict || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		wait := 2 * time.Second
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			wait = time.Duration(s) * time.Second
		}
		return 0, wait, fmt.Errorf("upload: %d %s", resp.StatusCode, clip(string(body), 200))
	}
	return 0, -1, fmt.Errorf("upload refused: %d %s", resp.StatusCode, clip(string(body), 500))
}

// followJob polls the job's status with a bar over its lines until it is
// finished; Ctrl-C stops following (the job goes on; a rerun resumes).
func (c *cli) followJob(soft context.Context, api *sdk.Client, id int64) (*sdkclient.Job, error) {
	var pb *progressbar.ProgressBar
	defer func() {
		if pb != nil {
			_ = pb.Exit()
			fmt.Fprintln(c.stderr)
		}
	}()
	for {
		resp, err := api.GetJobWithResponse(soft, strconv.FormatInt(id, 10))
		switch {
		case soft.Err() != nil:
			return nil, errInterrupted
		case err != nil:
			return nil, fmt.Errorf("job %d: %w", id, err)
		case resp.JSON200 == nil:
			return nil, fmt.Errorf("job %d: %d %s", id, resp.StatusCode(), clip(string(resp.Body), 300))
		}
		j := resp.JSON200
		cn := j.Counters
		done := cn.Received - cn.Pending - cn.InProgress
		if j.Create && !j.DryRun {
			done -= cn.Staged
		}
		if pb == nil && !c.quiet && c.stderrTTY && cn.Received > 0 {
			pb = progressbar.NewOptions64(int64(cn.Received), progressbar.OptionSetWriter(c.stderr),
				progressbar.OptionSetDescription(fmt.Sprintf("job %d", id)), progressbar.OptionShowCount(),
				progressbar.OptionShowIts(), progressbar.OptionSetItsString("acc"), progressbar.OptionSetPredictTime(true),
				progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionSetWidth(30))
		}
		if pb != nil {
			_ = pb.Set64(int64(done))
		}
		switch j.State {
		case sdkclient.JobStateCOMPLETED, sdkclient.JobStateFAILED, sdkclient.JobStateCANCELLED:
			return j, nil
		}
		select {
		case <-soft.Done():
			return nil, errInterrupted
		case <-time.After(time.Second):
		}
	}
}

// jobReport downloads the job's failed lines (invalid or failed) into the
// report, one row per field error, as the per-account push writes it.
func (c *cli) jobReport(ctx context.Context, api *sdk.Client, id int64, path string) error {
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
	rep, err := createReport(path)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bufio.NewReaderSize(resp.Body, 256<<10))
	for dec.More() {
		var l struct {
			Line     int    `json:"line"`
			External string `json:"external_account_number"`
			Outcome  string `json:"outcome"`
			Platform string `json:"platform_account_number"`
			Code     string `json:"code"`
			Detail   string `json:"detail"`
			Errors   []struct{ Attr, Code, Detail string }
		}
		if err := dec.Decode(&l); err != nil {
			_ = rep.close()
			return fmt.Errorf("job %d results: %w", id, err)
		}
		ext := l.External
		if ext == "" {
			ext = fmt.Sprintf("line %d", l.Line)
		}
		rows := []row{{External: ext, Outcome: l.Outcome, Platform: l.Platform, Code: l.Code, Detail: l.Detail}}
		if len(l.Errors) > 0 {
			rows = rows[:0]
			for _, e := range l.Errors {
				rows = append(rows, row{External: ext, Outcome: l.Outcome, Code: e.Code, Attr: e.Attr, Detail: e.Detail})
			}
		}
		if err := rep.write(rows); err != nil {
			_ = rep.close()
			return err
		}
	}
	return rep.close()
}

// clip shortens s to at most n bytes for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
