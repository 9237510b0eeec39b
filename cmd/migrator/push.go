package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	sdk "github.com/gridshift/dataimport/sdk/go"
	"github.com/gridshift/dataimport/sdk/go/client"
)

var (
	errInterrupted = errors.New("interrupted")
	errSomeFailed  = errors.New("some accounts failed")
)

// maxLine caps one NDJSON record; the API refuses far smaller bodies anyway.
const maxLine = 64 << 20

const apiPrefix = "/v1/data-import"

type pushOptions struct {
	file           string
	team           string
	dryRun         bool
	parallel       int
	postImport     string
	report         string
	requestTimeout time.Duration
	pollTimeout    time.Duration
	v2             bool     // the asynchronous API (push_v2.go)
	window         v2Window // its schedule window
	follow         string
	bulk           bool   // bulk import jobs, one per part of the file (push_bulk.go)
	supplier       string // with bulk: the jobs' import_supplier (default: the first line's)
	jobBytes       int64  // with bulk: the largest part of the file sent as one job
	jobBytesSet    bool   // --job-bytes was given (a resumed run keeps its recorded split)
	pausedWait     time.Duration
}

func (c *cli) pushCmd() *cobra.Command {
	o := pushOptions{}
	var windowStart, windowEnd, jobBytes string
	cmd := &cobra.Command{
		Use:   "push ACCOUNTS.ndjson",
		Short: "Validate, stage and create every account of an NDJSON file (one account object per line)",
		Long: `Push reads one account object per line and, for each, validates it, stages it and
creates it, then follows its status until it is COMPLETED or failed (--follow events:
through the event feed, one long-poll for the whole run, instead of polling each
account's status URL). It is resumable:
accounts already COMPLETED are skipped, so rerunning after a stop or a crash finishes
the file without duplicates. A report (CSV) lists every account's outcome and, for
failures, one row per field error.

Ctrl-C stops reading new accounts, lets the ones in flight finish and writes the
report; a second Ctrl-C aborts the ones in flight (rerun to resume them).

With --v2 each account is handed to the asynchronous API in one request, with the
schedule window of --window-start/--window-end (RFC 3339) if given, and its v2 status
is followed until PROCESSED (done) or ERRORED, CANCELLED or a dry-run outcome (the
report gives latest_error). --poll-timeout then counts from the window start. A
stop leaves scheduled accounts scheduled; a rerun follows them.

With --bulk the file is cut at line boundaries into parts of at most --job-bytes
(uncompressed; a longer line goes alone) and each part is uploaded, gzipped, as one
bulk import job, one after another while the API processes the earlier ones; then
one bar follows all the jobs and their failed lines go into the report, with their
line numbers in the whole file. The parts, their Idempotency-Keys and job ids are
kept in <report>.job: a rerun after Ctrl-C or a crash uploads only the parts not yet
accepted (a cut upload becomes the same job, never a second) and follows the others.

A supplier an operator Paused is waited out (--paused-wait); Complete is final.

Exit status: 0 all done, 2 some accounts failed, 130 interrupted, 1 other errors.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.file = args[0]
			if o.team == "" && !o.v2 {
				return errors.New("--team is required")
			}
			if (windowStart != "" || windowEnd != "") && !o.v2 {
				return errors.New("--window-start and --window-end need --v2")
			}
			var err error
			if o.window, err = parseWindow(windowStart, windowEnd); err != nil {
				return err
			}
			if o.parallel < 1 || o.parallel > 256 {
				return errors.New("--parallel must be from 1 to 256")
			}
			if o.follow != followStatus && o.follow != followEvents {
				return errors.New("--follow must be status or events")
			}
			if jobBytes != "" && !o.bulk {
				return errors.New("--job-bytes needs --bulk")
			}
			if o.bulk {
				if o.v2 || o.postImport != "" {
					return errors.New("--bulk cannot be combined with --v2 or --post-import")
				}
				o.jobBytes, o.jobBytesSet = defaultJobBytes, jobBytes != ""
				if o.jobBytesSet {
					n, err := humanize.ParseBytes(jobBytes)
					if err != nil || n == 0 || n > math.MaxInt64 {
						return fmt.Errorf("--job-bytes %q: must be a size such as 1GiB or 500MB", jobBytes)
					}
					o.jobBytes = int64(n)
				}
				return c.pushBulk(cmd.Context(), o)
			}
			return c.push(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.team, "team", "", "operations team name the accounts are created for (must exist; v1 only)")
	f.BoolVar(&o.dryRun, "dry-run", false, "stage and try each creation, then roll it back (nothing is created)")
	f.IntVar(&o.parallel, "parallel", 4, "accounts processed at once")
	f.StringVar(&o.postImport, "post-import", "", "directory with <external_account_number>/{notes,transactions,statements}.json to send after creation")
	f.StringVar(&o.report, "report", "migration-report.csv", "CSV report to write")
	f.DurationVar(&o.requestTimeout, "request-timeout", 2*time.Minute, "how long to wait for the answer to one request")
	f.DurationVar(&o.pollTimeout, "poll-timeout", 15*time.Minute, "how long to follow an account that is still in progress")
	f.BoolVar(&o.v2, "v2", false, "use the asynchronous v2 API: one create per account, then follow its v2 status")
	f.StringVar(&windowStart, "window-start", "", "with --v2: create no account before this time (RFC 3339)")
	f.StringVar(&windowEnd, "window-end", "", "with --v2: an account not started by this time (RFC 3339) ends ERRORED schedule_window_expired")
	f.BoolVar(&o.bulk, "bulk", false, "send the file as bulk import jobs of at most --job-bytes each (gzipped, with an upload progress bar), follow their counters, then download their failed lines as the report; a rerun after Ctrl-C resumes the same jobs (state in <report>.job)")
	f.StringVar(&o.supplier, "supplier", "", "with --bulk: the jobs' import_supplier (default: the first account's)")
	f.StringVar(&jobBytes, "job-bytes", "", "with --bulk: the most NDJSON (uncompressed) per job, cut at line boundaries, such as 500MB; keep it under the API's MAX_JOB_BYTES (default 1GiB)")
	f.DurationVar(&o.pausedWait, "paused-wait", defaultPauseWait, "how long to wait, per account or bulk part, while the supplier is Paused before reporting it failed (Complete is final at once)")
	f.StringVar(&o.follow, "follow", followStatus, "how to follow accounts still in progress: status (poll each status URL) or events (long-poll the event feed, one request for the whole run)")
	return cmd
}

// account is one record of the input.
type account struct {
	line     int
	raw      []byte
	supplier string
	external string
	bad      string // why the line cannot be sent at all
}

func (a account) id() string {
	if a.external != "" {
		return a.external
	}
	return fmt.Sprintf("line %d", a.line)
}

// result is what one account came to: its report rows, and an error that
// must stop the whole run (the API key is refused).
type result struct {
	outcome string
	rows    []row
	fatal   error
	paused  bool // refused because the supplier is Paused (paused.go)
}

type pusher struct {
	api    *api
	o      pushOptions
	log    *slog.Logger
	events *follower       // nil unless --follow events
	stop   <-chan struct{} // closed on a graceful stop
}

func (c *cli) push(soft context.Context, o pushOptions) (err error) {
	// soft ends on a graceful stop; hard (from c.abort) aborts requests.
	hard, cancelHard := context.WithCancel(c.abort)
	defer cancelHard()
	feed, stopFeed := context.WithCancelCause(soft)
	defer stopFeed(nil)

	in, err := os.Open(o.file)
	if err != nil {
		return fmt.Errorf("open accounts: %w", err)
	}
	defer in.Close()

	api, err := c.newAPI(o.parallel, o.requestTimeout, feed.Done())
	if err != nil {
		return err
	}
	// A refused key fails here, before anything is read or written.
	if _, err := api.Token(hard); err != nil {
		return err
	}

	var events *follower
	if o.follow == followEvents {
		// The feed from now on: every event of an account of this run is numbered after it.
		fctx, stopFollow := context.WithCancel(hard)
		defer stopFollow()
		if events, err = startFollower(fctx, api, c.log, o.requestTimeout); err != nil {
			return err
		}
	}

	rep, err := createReport(o.report)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := rep.close(); cerr != nil && err == nil {
			err = cerr
		}
	}()

	bar := c.newBar(o.file)
	p := &pusher{api: api, o: o, log: c.log, events: events, stop: feed.Done()}
	jobs := make(chan account)
	results := make(chan result, o.parallel)
	var eof bool
	var readErr error
	go func() {
		defer close(jobs)
		eof, readErr = readAccounts(feed, in, jobs)
	}()
	var wg sync.WaitGroup
	for range o.parallel {
		wg.Go(func() {
			for a := range jobs {
				results <- p.handle(hard, a)
			}
		})
	}
	go func() {
		wg.Wait()
		close(results)
	}()

	counts := map[string]int{}
	var fatal, writeErr error
	for r := range results {
		counts[r.outcome]++
		for _, x := range r.rows {
			if x.Outcome == outcomePostImportFailed {
				counts[outcomePostImportFailed]++
				break
			}
		}
		if err := rep.write(r.rows); err != nil && writeErr == nil {
			writeErr = err
			stopFeed(err)
		}
		if r.fatal != nil && fatal == nil {
			fatal = r.fatal
			stopFeed(r.fatal)
		}
		bar.add()
	}
	bar.finish()

	done := counts[outcomeCompleted] + counts[outcomeSkippedCompleted] + counts[outcomeDryRunOK] + counts[outcomeDryRunUnconfirmed]
	total := done + counts[outcomeFailed] + counts[outcomeInterrupted]
	fmt.Fprintf(c.stdout, "accounts %d: completed %d, already completed %d, dry-run ok %d, failed %d, interrupted %d",
		total, counts[outcomeCompleted], counts[outcomeSkippedCompleted], counts[outcomeDryRunOK]+counts[outcomeDryRunUnconfirmed],
		counts[outcomeFailed], counts[outcomeInterrupted])
	if o.postImport != "" {
		fmt.Fprintf(c.stdout, ", post-import failures %d", counts[outcomePostImportFailed])
	}
	fmt.Fprintf(c.stdout, " (429 waits %d, retries %d)\nreport: %s\n", api.throttled.Load(), api.retried.Load(), o.report)

	switch {
	case readErr != nil:
		return readErr
	case writeErr != nil:
		return writeErr
	case fatal != nil:
		return fmt.Errorf("run stopped: %w", fatal)
	case !eof || counts[outcomeInterrupted] > 0:
		return fmt.Errorf("%w after %d accounts; rerun the same command to resume", errInterrupted, total)
	case counts[outcomeFailed] > 0 || counts[outcomePostImportFailed] > 0:
		return fmt.Errorf("%w: %d failed, %d with post-import failures (see %s)", errSomeFailed,
			counts[outcomeFailed], counts[outcomePostImportFailed], o.report)
	}
	return nil
}

// readAccounts streams the file line by line into out until EOF (eof true)
// or until ctx ends (a graceful stop: eof false, nil error).
func readAccounts(ctx context.Context, r io.Reader, out chan<- account) (eof bool, err error) {
	br := bufio.NewReaderSize(r, 256<<10)
	for n := 1; ; n++ {
		raw, tooLong, err := readLine(br)
		if err != nil && err != io.EOF {
			return false, fmt.Errorf("read accounts line %d: %w", n, err)
		}
		if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 || tooLong {
			if ctx.Err() != nil {
				return false, nil
			}
			select {
			case out <- parseAccount(n, trimmed, tooLong):
			case <-ctx.Done():
				return false, nil
			}
		}
		if err == io.EOF {
			return true, nil
		}
	}
}

// readLine reads one line of any length up to maxLine; a longer line is
// skipped to its end and reported as too long.
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > maxLine {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return line, tooLong, err
	}
}

func parseAccount(n int, raw []byte, tooLong bool) account {
	a := account{line: n, raw: raw}
	switch {
	case tooLong:
		a.bad = fmt.Sprintf("line longer than %d MiB", maxLine>>20)
		return a
	case !json.Valid(raw):
		a.bad = "line is not valid JSON"
		return a
	}
	var id struct {
		ImportSupplier        any `json:"import_supplier"`
		ExternalAccountNumber any `json:"external_account_number"`
	}
	if json.Unmarshal(raw, &id) == nil {
		a.supplier, _ = id.ImportSupplier.(string)
		a.external, _ = id.ExternalAccountNumber.(string)
		a.supplier, a.external = strings.TrimSpace(a.supplier), strings.TrimSpace(a.external)
	}
	return a
}

// ---- one account ----

func (p *pusher) handle(ctx context.Context, a account) result {
	id := a.id()
	if a.bad != "" {
		return result{outcome: outcomeFailed, rows: []row{{External: id, Outcome: outcomeFailed, Code: "parse_error",
			Attr: "non_field_errors", Detail: a.bad}}}
	}
	log := p.log.With("account", id)
	res := whilePaused(ctx, p.stop, log, p.o.pausedWait, func(r result) bool { return r.paused },
		func() result { return p.run(ctx, a, id, log) })
	switch res.outcome {
	case outcomeFailed, outcomeInterrupted:
		log.WarnContext(ctx, "account not created", "outcome", res.outcome, "code", res.rows[0].Code, "detail", res.rows[0].Detail)
	default:
		log.DebugContext(ctx, "account done", "outcome", res.outcome)
	}
	return res
}

func (p *pusher) run(ctx context.Context, a account, id string, log *slog.Logger) result {
	if p.o.v2 {
		return p.runV2(ctx, a, id, log)
	}
	identified := a.supplier != "" && a.external != ""
	var events <-chan feedEvent
	if identified && p.events != nil {
		// Before anything that starts or looks at an attempt: none of its events is missed.
		var forget func()
		events, forget = p.events.expect(accountKey{a.supplier, a.external})
		defer forget()
	}
	if identified {
		// Resume: skip what is done, follow what is running.
		st, failure, err := p.status(ctx, a)
		switch {
		case err != nil:
			return fromErr(id, err)
		case failure != nil:
			return fromAPIError(id, outcomeFailed, failure)
		case st != nil && st.Status == client.ImportStatusCOMPLETED:
			return p.completed(ctx, a, outcomeSkippedCompleted, st.PlatformAccountNumber, "")
		case st != nil && st.Status == client.ImportStatusINPROGRESS:
			log.InfoContext(ctx, "already in progress, following it")
			return p.follow(ctx, a, events, 500*time.Millisecond)
		}
	}

	validated, err := p.api.ValidateAccountWithBodyWithResponse(ctx, nil, jsonType, bytes.NewReader(a.raw))
	if err != nil {
		return fromErr(id, err)
	}
	if validated.StatusCode() != http.StatusOK {
		return fromAPIError(id, outcomeFailed, sdk.NewAPIError(validated.HTTPResponse, validated.Body))
	}
	if !identified {
		return result{outcome: outcomeFailed, rows: []row{{External: id, Outcome: outcomeFailed, Code: "required",
			Attr: "external_account_number", Detail: "import_supplier and external_account_number are needed to stage the account."}}}
	}

	staged, err := p.api.StageAccountWithBodyWithResponse(ctx, nil, jsonType, bytes.NewReader(a.raw))
	if err != nil {
		return fromErr(id, err)
	}
	switch e := failed(staged.HTTPResponse, staged.Body); {
	case staged.StatusCode() == http.StatusOK || staged.StatusCode() == http.StatusCreated:
	case e == nil:
		return fromAPIError(id, outcomeFailed, sdk.NewAPIError(staged.HTTPResponse, staged.Body))
	case e.Code == "account_already_imported":
		return p.alreadyImported(ctx, a, e)
	case e.Code == "account_import_in_progress":
		return p.follow(ctx, a, events, 500*time.Millisecond)
	default:
		return fromAPIError(id, outcomeFailed, e)
	}

	created, err := p.api.CreateAccountWithResponse(ctx, nil, client.CreateAccountRequest{ExternalAccountNumber: a.external,
		ImportSupplierCode: a.supplier, OperationsTeamName: p.o.team, DryRun: &p.o.dryRun})
	if err != nil {
		return fromErr(id, err)
	}
	e := failed(created.HTTPResponse, created.Body)
	switch {
	case created.JSON201 != nil:
		return p.completed(ctx, a, outcomeCompleted, created.JSON201.PlatformAccountNumber, "")
	case created.StatusCode() == http.StatusAccepted:
		wait := time.Second
		if h := created.Headers202; h != nil && h.RetryAfter > 0 {
			wait = time.Duration(h.RetryAfter) * time.Second
		}
		return p.follow(ctx, a, events, wait)
	case e == nil:
		e = sdk.NewAPIError(created.HTTPResponse, created.Body) // an unexpected success
	case e.Code == "account_already_imported":
		return p.alreadyImported(ctx, a, e)
	case e.Code == "dry_run_rolled_back":
		return result{outcome: outcomeDryRunOK, rows: []row{{External: id, Outcome: outcomeDryRunOK, Code: e.Code, Detail: e.Detail}}}
	}
	return fromAPIError(id, outcomeFailed, e)
}

// alreadyImported is the result of an account_already_imported answer: the
// account exists, its number is in the answer.
func (p *pusher) alreadyImported(ctx context.Context, a account, e *sdk.APIError) result {
	var body client.AccountAlreadyImportedError
	if err := e.Decode(&body); err != nil {
		return fromErr(a.id(), err)
	}
	return p.completed(ctx, a, outcomeCompleted, body.PlatformAccountNumber, "already imported")
}

// status returns the account's import status; nil on 404 (never staged).
// failure is set for any other unexpected answer.
func (p *pusher) status(ctx context.Context, a account) (st *client.AccountStatus, failure *sdk.APIError, err error) {
	r, err := p.api.AccountTransferStatusWithResponse(ctx, a.supplier, a.external)
	if err != nil {
		return nil, nil, err
	}
	return found(r.HTTPResponse, r.Body, r.JSON200)
}

// found reads a status answer (v1 or v2): nil on 404, failure for any
// answer but a 200 with its body.
func found[T any](resp *http.Response, body []byte, st *T) (*T, *sdk.APIError, error) {
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, nil, nil
	case resp.StatusCode != http.StatusOK || st == nil:
		return nil, sdk.NewAPIError(resp, body), nil
	}
	return st, nil, nil
}

// poll follows an account in progress until COMPLETED or UNKNOWN, waiting
// first, then backing off to one look every 5s.
func (p *pusher) poll(ctx context.Context, a account, wait time.Duration) result {
	id := a.id()
	deadline := time.Now().Add(p.o.pollTimeout)
	for {
		if err := sleep(ctx, nil, wait); err != nil {
			return fromErr(id, err)
		}
		st, failure, err := p.status(ctx, a)
		switch {
		case err != nil:
			return fromErr(id, err)
		case failure != nil:
			return fromAPIError(id, outcomeFailed, failure)
		case st == nil:
			return result{outcome: outcomeFailed, rows: []row{{External: id, Outcome: outcomeFailed, Code: "not_found",
				Detail: "The status endpoint no longer knows this account."}}}
		case st.Status == client.ImportStatusCOMPLETED:
			return p.completed(ctx, a, outcomeCompleted, st.PlatformAccountNumber, "")
		case st.Status == client.ImportStatusUNKNOWN && p.o.dryRun:
			// The status endpoint does not say how a dry run ended.
			r := row{External: id, Outcome: outcomeDryRunUnconfirmed, Detail: "Dry run finished after a 202; its result is not reported by the status endpoint."}
			if st.LatestError != nil {
				r.Code, r.Detail = st.LatestError.Code, "latest_error (may be from an earlier attempt): "+st.LatestError.Detail
			}
			return result{outcome: outcomeDryRunUnconfirmed, rows: []row{r}}
		case st.Status == client.ImportStatusUNKNOWN:
			if st.LatestError == nil {
				return result{outcome: outcomeFailed, rows: []row{{External: id, Outcome: outcomeFailed, Code: "import_failed",
					Detail: "Creation ended without an account and without an error; rerun to retry."}}}
			}
			return result{outcome: outcomeFailed, rows: latestRows(id, outcomeFailed, st.LatestError)}
		}
		if time.Now().After(deadline) {
			return result{outcome: outcomeFailed, rows: []row{{External: id, Outcome: outcomeFailed, Code: "account_import_in_progress",
				Detail: fmt.Sprintf("Still in progress after %s; rerun to follow it.", p.o.pollTimeout)}}}
		}
		wait = min(wait*3/2+250*time.Millisecond, 5*time.Second)
	}
}

// completed is the result of an account that exists, with its post-import
// data sent when asked (again on a rerun: those endpoints are idempotent).
func (p *pusher) completed(ctx context.Context, a account, outcome, platform, detail string) result {
	res := result{outcome: outcome, rows: []row{{External: a.id(), Outcome: outcome, Platform: platform, Detail: detail}}}
	if p.o.postImport != "" && !p.o.dryRun {
		sent, failures, fatal := p.sendPostImport(ctx, a)
		if sent != "" {
			res.rows[0].Detail = strings.TrimPrefix(res.rows[0].Detail+"; post-import: "+sent, "; ")
		}
		res.rows = append(res.rows, failures...)
		res.fatal = fatal
	}
	return res
}

// fromErr turns an error without an answer into a result.
func fromErr(id string, err error) result {
	switch {
	case errors.Is(err, errStopped), errors.Is(err, sdk.ErrStopped), errors.Is(err, context.Canceled):
		return result{outcome: outcomeInterrupted, rows: []row{{External: id, Outcome: outcomeInterrupted, Code: "interrupted",
			Detail: "Stopped before it finished; rerun to resume."}}}
	case authRefused(err):
		return result{outcome: outcomeFailed, fatal: err, rows: []row{{External: id, Outcome: outcomeFailed, Code: "authentication_failed", Detail: err.Error()}}}
	}
	return result{outcome: outcomeFailed, rows: []row{{External: id, Outcome: outcomeFailed, Code: "request_failed", Detail: err.Error()}}}
}

// fromAPIError turns an error answer into a result: one row per field
// error. A 401 that survived a token renewal stops the run.
func fromAPIError(id, outcome string, e *sdk.APIError) result {
	res := result{outcome: outcome, rows: errorRows(id, outcome, e.Code, e.Detail, e.Errors), paused: supplierPaused(e.Code, e.Detail)}
	if e.StatusCode == http.StatusUnauthorized {
		res.fatal = e
	}
	return res
}

// ---- progress ----

// bar is a progress bar on stderr, or nothing when stderr is not a terminal
// or --quiet is given.
type bar struct {
	pb *progressbar.ProgressBar
	w  io.Writer
}

func (c *cli) newBar(file string) bar {
	if c.quiet || !c.stderrTTY {
		return bar{}
	}
	total, err := countRecords(file)
	if err != nil {
		c.log.Warn("cannot count the accounts; no ETA", "err", err)
		total = -1
	}
	return bar{w: c.stderr, pb: progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(c.stderr),
		progressbar.OptionSetDescription("accounts"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("acc"),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetWidth(30),
	)}
}

func (b bar) add() {
	if b.pb != nil {
		_ = b.pb.Add(1)
	}
}

func (b bar) finish() {
	if b.pb != nil {
		_ = b.pb.Exit()
		fmt.Fprintln(b.w)
	}
}

// countRecords counts the non-blank lines of the file, streaming.
func countRecords(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("count accounts: %w", err)
	}
	defer f.Close()
	var n int64
	blank := true
	buf := make([]byte, 256<<10)
	for {
		k, err := f.Read(buf)
		for _, b := range buf[:k] {
			switch b {
			case '\n':
				if !blank {
					n++
				}
				blank = true
			case ' ', '\t', '\r':
			default:
				blank = false
			}
		}
		if err == io.EOF {
			if !blank {
				n++
			}
			return n, nil
		}
		if err != nil {
			return 0, fmt.Errorf("count accounts: %w", err)
		}
	}
}
