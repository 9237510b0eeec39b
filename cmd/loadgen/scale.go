package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/gridshift/dataimport/jobs"
)

// loadgen scale (`make bench-scale`): BENCH_ACCOUNTS accounts through one
// bulk import job on a fresh database: the NDJSON bodies generated and
// gzipped to files before the clock starts (the partner's export), each
// streamed from disk as it is sent, then the jobs followed to the
// end while job and account status are read at a fixed rate. Then pgbench's
// per-account ceiling for the same writes. Report: results/scale.md with a
// chart of accounts/s and status p99 over time, disk per account, and the
// API's and worker's peak RSS.

type scaleConfig struct {
	API, APIKey, Supplier, Team, Prefix string
	Accounts, StatusRate                int
	DBURL, Out                          string
	APIPID, WorkerPID                   int
	PgClients, PgSeconds                int
	// Floor dumps the account tables after the run and times their restore
	// into an empty database, with FloorJobs parallel pg_restore jobs.
	Floor     bool
	FloorJobs int
	// Compacted measures the bookkeeping again once the jobs are compacted
	// (measureCompacted), after the floor and before the ceiling.
	Compacted bool
	// JobAccounts is the most accounts one job carries: a partner splits a
	// migration into jobs that fit MAX_JOB_BYTES (default 2 GiB of NDJSON,
	// about 500,000 of these 4 KB accounts).
	JobAccounts int
}

// scaleSample is one second of the run.
type scaleSample struct {
	T          float64 `json:"t"`           // seconds since the upload started
	Done       int64   `json:"done"`        // lines finished
	Rate       float64 `json:"rate"`        // accounts/s over this second
	StatusP99  float64 `json:"status_p99"`  // ms, reads in this second
	StatusMax  float64 `json:"status_max"`  // ms
	StatusN    int     `json:"status_n"`    // reads in this second
	StatusErrs int     `json:"status_errs"` // failed reads in this second
}

type scaleResult struct {
	When                time.Time      `json:"when"`
	Machine             string         `json:"machine"`
	Accounts            int            `json:"accounts"`
	UploadSeconds       float64        `json:"upload_seconds"`
	UploadBytes         int64          `json:"upload_bytes"`
	JobAccounts         int            `json:"job_accounts"` // most accounts per job
	Jobs                int            `json:"jobs"`
	ProcessSeconds      float64        `json:"process_seconds"` // accepted → COMPLETED
	TotalSeconds        float64        `json:"total_seconds"`   // upload start → COMPLETED
	Counters            map[string]int `json:"counters"`
	AccountsPerSecond   float64        `json:"accounts_per_second"` // created / total
	StatusRate          int            `json:"status_rate"`
	StatusP50           float64        `json:"status_p50_ms"`
	StatusP99           float64        `json:"status_p99_ms"`
	StatusMax           float64        `json:"status_max_ms"`
	StatusReads         int            `json:"status_reads"`
	StatusErrs          int            `json:"status_errors"`
	DiskBytesPerAccount float64        `json:"disk_bytes_per_account"`
	APIPeakKB           int64          `json:"api_peak_kb"`
	WorkerPeakKB        int64          `json:"worker_peak_kb"`
	PgClients           int            `json:"pgbench_clients"`
	Ceiling             pgbenchResult  `json:"ceiling"`
	Samples             []scaleSample  `json:"samples"`
	// TenthRates are accounts/s over each tenth of the accounts, in order
	// (does the cost stay flat as the tables grow?).
	TenthRates []float64 `json:"tenth_rates"`
	// The per-read p99 while the uploads streamed in and after the last
	// was accepted.
	StatusP99Uploading float64 `json:"status_p99_uploading_ms"`
	StatusP99After     float64 `json:"status_p99_after_ms"`
	// Status reads by answer (0: no answer), job status and account v1
	// status apart.
	JobStatusCodes     map[int]int `json:"job_status_codes"`
	AccountStatusCodes map[int]int `json:"account_status_codes"`
	// Account reads sent after the account's job was accepted, and how
	// many of them answered 404 (the 202 promises the account is known).
	AccountReadsAccepted    int `json:"account_reads_accepted"`
	AccountNotFoundAccepted int `json:"account_404_accepted"`
	// Bookkeeping is the tables' growth split between the account tables
	// and the import's bookkeeping, after a CHECKPOINT.
	Bookkeeping *bookkeepingResult `json:"bookkeeping,omitempty"`
	// Compacted is the same split once the jobs are compacted, the tables
	// the compaction wrote rewritten (VACUUM FULL) so its dead rows do
	// not count.
	Compacted *compactedResult `json:"compacted,omitempty"`
	// Floor is the account tables' dump and restore.
	Floor *floorResult `json:"floor,omitempty"`
}

// tenthRates splits the run by accounts finished into tenths and returns
// each tenth's accounts/s, timed from the first finished account (the
// upload before it is not creation). Tenths the samples cannot place are 0.
func tenthRates(samples []scaleSample, n int) []float64 {
	if n <= 0 || len(samples) == 0 {
		return nil
	}
	// at(k) is when the k-th account had finished (linear within a second).
	at := func(k float64) (float64, bool) {
		prevT, prevD := 0.0, 0.0
		for _, s := range samples {
			d := float64(s.Done)
			if d >= k {
				if d == prevD {
					return s.T, true
				}
				return prevT + (s.T-prevT)*(k-prevD)/(d-prevD), true
			}
			prevT, prevD = s.T, d
		}
		return 0, false
	}
	start, ok := at(1)
	if !ok {
		return nil
	}
	out := make([]float64, 10)
	from := start
	for i := 1; i <= 10; i++ {
		to, ok := at(float64(n) * float64(i) / 10)
		if !ok {
			break
		}
		if to > from {
			out[i-1] = float64(n) / 10 / (to - from)
		}
		from = to
	}
	return out
}

func scaleCmd() *cobra.Command {
	var cfg scaleConfig
	cmd := &cobra.Command{
		Use:   "scale",
		Short: "Accounts through one bulk import job; report throughput, status latency, disk and memory (make bench-scale)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := runScale(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			return writeScale(res, cfg.Out)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.API, "api", "http://127.0.0.1:8080", "API base URL")
	f.StringVar(&cfg.APIKey, "api-key", "", "partner API key")
	f.StringVar(&cfg.Supplier, "supplier", "BENCH_ENERGY", "supplier code")
	f.StringVar(&cfg.Team, "team", "Migrations", "operations team")
	f.StringVar(&cfg.Prefix, "prefix", "SC-", "external account number prefix")
	f.IntVar(&cfg.Accounts, "accounts", 1500000, "accounts in the job")
	f.IntVar(&cfg.StatusRate, "status-rate", 200, "status reads per second (job and account status, alternately) throughout")
	f.StringVar(&cfg.DBURL, "database-url", os.Getenv("DATABASE_URL"), "the service's database (disk size, pgbench)")
	f.StringVar(&cfg.Out, "out", "results", "report folder")
	f.IntVar(&cfg.APIPID, "api-pid", 0, "pid of the api process (RSS sampling)")
	f.IntVar(&cfg.WorkerPID, "worker-pid", 0, "pid of the worker process (RSS sampling)")
	f.IntVar(&cfg.PgClients, "pgbench-clients", 32, "pgbench client connections")
	f.IntVar(&cfg.PgSeconds, "pgbench-seconds", 15, "pgbench duration (0 skips the ceiling)")
	f.BoolVar(&cfg.Floor, "floor", true, "time pg_restore of the account tables into an empty database after the run (the physical floor)")
	f.BoolVar(&cfg.Compacted, "compacted", true, "after the floor, compact the completed jobs with the worker's compactor and measure the bookkeeping again (VACUUM FULL of the tables the compaction wrote)")
	f.IntVar(&cfg.FloorJobs, "floor-jobs", runtime.NumCPU(), "pg_restore parallel jobs for the floor")
	f.IntVar(&cfg.JobAccounts, "job-accounts", 400000, "most accounts per job (the migration is split into jobs that fit MAX_JOB_BYTES; each is uploaded while the earlier ones are processed)")
	_ = cmd.MarkFlagRequired("api-key")
	return cmd
}

func dbSize(ctx context.Context, dbURL string) (int64, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&n)
	return n, err
}

// countingWriter counts bytes written.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func runScale(ctx context.Context, cfg scaleConfig) (*scaleResult, error) {
	res := &scaleResult{When: time.Now().UTC(), Machine: machine(), Accounts: cfg.Accounts, StatusRate: cfg.StatusRate, PgClients: cfg.PgClients}
	c := newClient(cfg.API, 8)
	c.http.Timeout = 0 // the upload may take minutes
	if err := c.login(ctx, cfg.APIKey); err != nil {
		return nil, err
	}
	checkpoint(ctx, cfg.DBURL)
	before, err := dbSize(ctx, cfg.DBURL)
	if err != nil {
		return nil, fmt.Errorf("database size: %w", err)
	}
	tablesBefore, err := tableSizes(ctx, cfg.DBURL)
	if err != nil {
		return nil, err
	}
	perJob := max(cfg.JobAccounts, 1)
	res.JobAccounts, res.Jobs = perJob, (cfg.Accounts+perJob-1)/perJob
	bodyDir, err := os.MkdirTemp("", "bench-scale-bodies-")
	if err != nil {
		return nil, fmt.Errorf("job bodies: %w", err)
	}
	defer os.RemoveAll(bodyDir)
	t0 := time.Now()
	bodies, err := writeJobBodies(ctx, cfg, bodyDir, perJob)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "wrote %d job bodies in %.0f s\n", len(bodies), time.Since(t0).Seconds())

	stopRSS := make(chan struct{})
	apiPeak, workerPeak := peakRSS(cfg.APIPID, stopRSS), peakRSS(cfg.WorkerPID, stopRSS)

	start := time.Now()
	// Status reads at a fixed rate from the start: the latest job's, and an
	// account's (created or not yet), alternately.
	var mu sync.Mutex
	type read struct {
		at   float64
		ms   float64
		err  bool
		code int // 0: no answer
		// account read (not the job's), of an account whose job had been
		// accepted when the read was sent
		account, accepted bool
	}
	var lat []read
	var jobPaths []string
	acceptedHi := 0 // accounts below this are in accepted jobs (sent in order)
	statusCtx, stopStatus := context.WithCancel(ctx)
	defer stopStatus()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second / time.Duration(max(cfg.StatusRate, 1)))
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-statusCtx.Done():
				return
			case <-t.C:
			}
			mu.Lock()
			var jp string
			if len(jobPaths) > 0 {
				jp = jobPaths[len(jobPaths)-1]
			}
			hi := acceptedHi
			mu.Unlock()
			idx := (i * 7919) % cfg.Accounts
			path := fmt.Sprintf("/v1/data-import/account-transfer-status/%s/%s%08d/", cfg.Supplier, cfg.Prefix, idx)
			rd := read{account: true, accepted: idx < hi}
			if i%2 == 0 && jp != "" {
				path, rd = jp, read{}
			}
			go func() {
				t0 := time.Now()
				r, err := c.do(statusCtx, http.MethodGet, path, nil)
				if statusCtx.Err() != nil {
					return
				}
				rd.at, rd.ms = time.Since(start).Seconds(), float64(time.Since(t0).Microseconds())/1000
				rd.err = err != nil || (r.status != http.StatusOK && r.status != http.StatusNotFound)
				if err == nil {
					rd.code = r.status
				}
				mu.Lock()
				lat = append(lat, rd)
				mu.Unlock()
			}()
		}
	}()

	// The jobs, uploaded one after another while the worker processes the
	// ones already received.
	uploaded := make(chan error, 1)
	go func() {
		for _, b := range bodies {
			lo, hi := b.lo, b.hi
			path, n, err := uploadJob(ctx, c, cfg, b)
			if err != nil {
				uploaded <- err
				return
			}
			mu.Lock()
			jobPaths = append(jobPaths, path)
			acceptedHi = hi
			res.UploadBytes += n
			mu.Unlock()
			fmt.Fprintf(os.Stderr, "%.0f s: uploaded accounts %d-%d (%.1f MB gzipped)\n", time.Since(start).Seconds(), lo, hi-1, float64(n)/1e6)
		}
		mu.Lock()
		res.UploadSeconds = time.Since(start).Seconds()
		mu.Unlock()
		uploaded <- nil
	}()

	// Follow the jobs: lines done per second, over all of them.
	var doneAt []struct {
		t    float64
		done int64
	}
	allUploaded := false
	for {
		select {
		case err := <-uploaded:
			if err != nil {
				return nil, err
			}
			allUploaded = true
		default:
		}
		mu.Lock()
		paths := slices.Clone(jobPaths)
		mu.Unlock()
		var done int64
		finished := 0
		counters := map[string]int{}
		var states []string
		for _, jp := range paths {
			r, err := c.do(ctx, http.MethodGet, jp, nil)
			if err != nil {
				return nil, err
			}
			var j struct {
				State    string         `json:"state"`
				Counters map[string]int `json:"counters"`
			}
			if err := json.Unmarshal(r.body, &j); err != nil || r.status != http.StatusOK {
				// Never read an error answer as a finished job.
				return nil, fmt.Errorf("job status: %d %s", r.status, r.body)
			}
			cn := j.Counters
			done += int64(cn["received"] - cn["pending"] - cn["in_progress"] - cn["staged"])
			for k, v := range cn {
				counters[k] += v
			}
			states = append(states, j.State)
			if j.State != "PROCESSING" && j.State != "RECEIVING" {
				finished++
			}
		}
		doneAt = append(doneAt, struct {
			t    float64
			done int64
		}{time.Since(start).Seconds(), done})
		if len(doneAt)%30 == 0 {
			fmt.Fprintf(os.Stderr, "%.0f s: %v %d/%d\n", time.Since(start).Seconds(), states, done, cfg.Accounts)
		}
		if allUploaded && finished == len(paths) {
			res.Counters = counters
			break
		}
		if err := sleep(ctx, time.Second); err != nil {
			return nil, err
		}
	}
	res.TotalSeconds = time.Since(start).Seconds()
	res.ProcessSeconds = res.TotalSeconds - res.UploadSeconds
	stopStatus()
	wg.Wait()
	close(stopRSS)
	res.APIPeakKB, res.WorkerPeakKB = apiPeak.Load(), workerPeak.Load()
	res.AccountsPerSecond = float64(res.Counters["created"]) / res.TotalSeconds

	checkpoint(ctx, cfg.DBURL)
	if after, err := dbSize(ctx, cfg.DBURL); err == nil && res.Counters["created"] > 0 {
		res.DiskBytesPerAccount = float64(after-before) / float64(res.Counters["created"])
	}
	tablesAfter, err := tableSizes(ctx, cfg.DBURL)
	if err != nil {
		return nil, err
	}
	bk := bookkeeping(tablesBefore, tablesAfter, res.Counters["created"])
	res.Bookkeeping = &bk
	// Jobs the worker compacted before this measure (JOB_COMPACT_AFTER
	// after each completed: the first jobs of a long run).
	compactedAtCompletion := 0
	if cfg.Compacted {
		if _, compactedAtCompletion, err = jobsCompacted(ctx, cfg.DBURL); err != nil {
			return nil, err
		}
	}
	// Before the ceiling: pgbench's accounts land in the same tables.
	if cfg.Floor {
		fmt.Fprintf(os.Stderr, "%.0f s: dumping the account tables and timing their restore (the floor)\n", time.Since(start).Seconds())
		if res.Floor, err = measureFloor(ctx, cfg.DBURL, cfg.FloorJobs); err != nil {
			return nil, err
		}
	}
	// After the floor (its restore is timed alone), before the ceiling.
	if cfg.Compacted {
		fmt.Fprintf(os.Stderr, "%.0f s: compacting the completed jobs and measuring the bookkeeping again\n", time.Since(start).Seconds())
		if res.Compacted, err = measureCompacted(ctx, cfg.DBURL, tablesBefore, res.Counters["created"]); err != nil {
			return nil, err
		}
		res.Compacted.CompactedAtCompletion = compactedAtCompletion
		fmt.Fprintf(os.Stderr, "%.0f s: %d of %d jobs compacted (compaction %.1f s, VACUUM FULL %.1f s)\n", time.Since(start).Seconds(),
			res.Compacted.Compacted, res.Compacted.Jobs, res.Compacted.CompactSeconds, res.Compacted.VacuumSeconds)
	}

	// Per-second samples.
	mu.Lock()
	secs := int(res.TotalSeconds) + 1
	per := make([][]float64, secs)
	errs := make([]int, secs)
	var all, uploading, afterUploads []time.Duration
	res.JobStatusCodes, res.AccountStatusCodes = map[int]int{}, map[int]int{}
	for _, l := range lat {
		if l.account {
			res.AccountStatusCodes[l.code]++
			if l.accepted {
				res.AccountReadsAccepted++
				if l.code == http.StatusNotFound {
					res.AccountNotFoundAccepted++
				}
			}
		} else {
			res.JobStatusCodes[l.code]++
		}
		s := min(int(l.at), secs-1)
		if l.err {
			errs[s]++
			res.StatusErrs++
			continue
		}
		per[s] = append(per[s], l.ms)
		d := time.Duration(l.ms * float64(time.Millisecond))
		all = append(all, d)
		if l.at-l.ms/1000 < res.UploadSeconds { // sent while uploads streamed in
			uploading = append(uploading, d)
		} else {
			afterUploads = append(afterUploads, d)
		}
	}
	mu.Unlock()
	for _, xs := range [][]time.Duration{all, uploading, afterUploads} {
		slices.Sort(xs)
	}
	res.StatusP99Uploading = float64(percentile(uploading, 0.99).Microseconds()) / 1000
	res.StatusP99After = float64(percentile(afterUploads, 0.99).Microseconds()) / 1000
	res.StatusReads = len(all)
	res.StatusP50 = float64(percentile(all, 0.5).Microseconds()) / 1000
	res.StatusP99 = float64(percentile(all, 0.99).Microseconds()) / 1000
	res.StatusMax = float64(percentile(all, 1).Microseconds()) / 1000
	k := 0
	for s := range secs {
		smp := scaleSample{T: float64(s)}
		for k+1 < len(doneAt) && doneAt[k+1].t <= float64(s+1) {
			k++
		}
		if len(doneAt) > 0 && doneAt[k].t <= float64(s+1) {
			smp.Done = doneAt[k].done
		}
		// Lines finish a creation round at a time: a 5-second window
		// shows the rate rather than the rounds.
		if w := min(s, 5); w > 0 {
			smp.Rate = float64(smp.Done-res.Samples[s-w].Done) / float64(w)
		}
		xs := per[s]
		sort.Float64s(xs)
		smp.StatusN, smp.StatusErrs = len(xs), errs[s]
		if len(xs) > 0 {
			smp.StatusP99 = xs[min(len(xs)-1, int(float64(len(xs))*0.99))]
			smp.StatusMax = xs[len(xs)-1]
		}
		res.Samples = append(res.Samples, smp)
	}

	res.TenthRates = tenthRates(res.Samples, cfg.Accounts)
	if cfg.PgSeconds > 0 {
		payload := mustJSON(realisticAccount(cfg.Supplier, "PGB", 0))
		s, err := preparePgbench(ctx, cfg.DBURL, cfg.Supplier, payload)
		if err != nil {
			return nil, err
		}
		defer s.close()
		tps, err := pgbench(ctx, cfg.DBURL, s.account, s.supID, "-c", strconv.Itoa(cfg.PgClients), "-j", "2", "-T", strconv.Itoa(cfg.PgSeconds))
		if err != nil {
			return nil, err
		}
		res.Ceiling.AccountTPS = tps
	}
	return res, nil
}

// uploadJob sends one job's body, streamed from its file, and returns the
// job's status path and the bytes sent.
func uploadJob(ctx context.Context, c *client, cfg scaleConfig, body jobBody) (string, int64, error) {
	path, n, err := uploadJobOnce(ctx, c, cfg, body)
	if errors.Is(err, errUnauthorized) {
		// The token expired during a long run: renew it and send the job again.
		if err := c.login(ctx, cfg.APIKey); err != nil {
			return "", 0, err
		}
		return uploadJobOnce(ctx, c, cfg, body)
	}
	return path, n, err
}

var errUnauthorized = errors.New("401 unauthorized")

// jobBody is one job's NDJSON body, gzipped, in a file: the partner's
// export, written before the clock starts.
type jobBody struct {
	path     string
	lo, hi   int
	gzipSize int64
}

// writeJobBodies writes every job's body to a file under dir, two at a
// time. The export is the partner's work, done on the partner's machine
// before the migration starts: generated during the run, it took a third to
// a whole core of this machine from the services being measured.
func writeJobBodies(ctx context.Context, cfg scaleConfig, dir string, perJob int) ([]jobBody, error) {
	var bodies []jobBody
	for lo := 0; lo < cfg.Accounts; lo += perJob {
		bodies = append(bodies, jobBody{path: filepath.Join(dir, fmt.Sprintf("job-%08d.ndjson.gz", lo)), lo: lo, hi: min(lo+perJob, cfg.Accounts)})
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(2)
	for i := range bodies {
		b := &bodies[i]
		g.Go(func() error {
			f, err := os.Create(b.path)
			if err != nil {
				return fmt.Errorf("job body: %w", err)
			}
			cw := &countingWriter{w: f}
			zw, _ := gzip.NewWriterLevel(cw, gzip.BestSpeed)
			bw := bufio.NewWriterSize(zw, 256<<10)
			enc := json.NewEncoder(bw)
			for j := b.lo; j < b.hi && err == nil; j++ {
				if err = gctx.Err(); err != nil { // Ctrl-C stops the export too
					break
				}
				err = enc.Encode(realisticAccount(cfg.Supplier, fmt.Sprintf("%s%08d", cfg.Prefix, j), j))
			}
			if err == nil {
				err = bw.Flush()
			}
			if err == nil {
				err = zw.Close()
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("job body %s: %w", b.path, err)
			}
			b.gzipSize = cw.n
			return nil
		})
	}
	return bodies, g.Wait()
}

func uploadJobOnce(ctx context.Context, c *client, cfg scaleConfig, body jobBody) (string, int64, error) {
	f, err := os.Open(body.path)
	if err != nil {
		return "", 0, fmt.Errorf("upload: %w", err)
	}
	defer f.Close()
	q := "import_supplier=" + cfg.Supplier + "&operations_team_name=" + strings.ReplaceAll(cfg.Team, " ", "+")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.API+"/v1/data-import/jobs/?"+q, f)
	if err != nil {
		return "", 0, err
	}
	req.ContentLength = body.gzipSize
	req.Header.Set("Authorization", "Token "+c.bearer())
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("Content-Encoding", "gzip")
	resp, err := c.http.Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("upload: %w", err)
	}
	respBody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return "", 0, fmt.Errorf("upload: %w", errUnauthorized)
	}
	if resp.StatusCode != http.StatusAccepted {
		return "", 0, fmt.Errorf("upload: %d %s", resp.StatusCode, respBody)
	}
	var acc struct {
		StatusURL string `json:"status_url"`
	}
	if err := json.Unmarshal(respBody, &acc); err != nil || acc.StatusURL == "" {
		return "", 0, fmt.Errorf("upload: %d %s", resp.StatusCode, respBody)
	}
	return acc.StatusURL, body.gzipSize, nil
}

func writeScale(res *scaleResult, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := scaleChart(res, filepath.Join(dir, "scale.png")); err != nil {
		return fmt.Errorf("chart: %w", err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Bulk job at scale %s\n\n", res.When.Format(time.RFC3339))
	fmt.Fprintf(&b, "Machine: %s. One `make bench-scale` run on a fresh database: **%d accounts** (the `make bench` account: 2 customers, 1 supply address, 2 meter points with agreements and meters, 2 notes, 5 opening transactions, ~4 KB of JSON each) in bulk import jobs of at most %d accounts (each within MAX_JOB_BYTES), uploaded one after another (the worker's rounds wait while an upload streams in fast, and process what was received in between and after), each NDJSON body generated and gzipped to a file before the clock started (the partner's export) and streamed from disk; status read %s throughout (the job's status and an account's v1 status, alternately).",
		res.Machine, res.Accounts, res.JobAccounts, fmt.Sprintf("%d times a second", res.StatusRate))
	// A profiling run may skip the floor and the ceiling: their sentences
	// and rows appear only when measured.
	if res.Floor != nil {
		b.WriteString(" The physical floor is Postgres alone landing the same account rows: after the jobs completed, the account tables dumped and timed restoring into an empty database; end to end ÷ floor is how far the pipeline is from it.")
	}
	if res.Ceiling.AccountTPS > 0 {
		b.WriteString(" The ceiling is `pgbench` running the same per-account SQL writes (staging, start, creation) on the same database right after, from a fresh `CHECKPOINT`.")
	}
	if cb := res.Compacted; cb != nil {
		fmt.Fprintf(&b, " The bookkeeping is weighed twice: when the jobs complete, and once they are compacted. The worker keeps its JOB_COMPACT_AFTER (default 10 min: a retention choice, not a speed setting), and the benchmark does not wait for it: once the jobs have completed (and the floor is measured), loadgen runs the worker's own compactor (`jobs.JobCompactor`, batches of 500 lines %s apart) on the completed jobs not compacted yet, then rewrites every bookkeeping table with `VACUUM FULL` once no older transaction of the database runs, so no dead row counts: neither those the compaction deleted or replaced nor those processing left (a line's outcome, a process's states, each event numbered by the relay after it was written). The account tables are measured as at completion: creation only inserts into them",
			jobs.CompactPause)
		if cb.AccountRowsChanged > 0 {
			fmt.Fprintf(&b, " (%d of their rows were updated or deleted in this run: those dead rows count)", cb.AccountRowsChanged)
		}
		b.WriteString(".")
	}
	b.WriteString("\n\n")
	ratio := 0.0
	if res.Ceiling.AccountTPS > 0 {
		ratio = res.AccountsPerSecond / res.Ceiling.AccountTPS
	}
	b.WriteString("| measure | value |\n|---|---|\n")
	fmt.Fprintf(&b, "| accounts created | %d of %d (invalid %d, failed %d) |\n", res.Counters["created"], res.Accounts, res.Counters["invalid"], res.Counters["failed"])
	fmt.Fprintf(&b, "| uploads (%d jobs, %.1f MB gzipped in all, stored durably) | last accepted after %.1f s |\n", res.Jobs, float64(res.UploadBytes)/1e6, res.UploadSeconds)
	fmt.Fprintf(&b, "| upload start → COMPLETED | **%.1f s** (%.1f min; goal for 1,500,000: < 30 min) |\n", res.TotalSeconds, res.TotalSeconds/60)
	fmt.Fprintf(&b, "| accounts/s, end to end | **%.1f** |\n", res.AccountsPerSecond)
	if res.Ceiling.AccountTPS > 0 {
		fmt.Fprintf(&b, "| pgbench per-account ceiling (same writes, %d clients) | %.1f accounts/s |\n", res.PgClients, res.Ceiling.AccountTPS)
		fmt.Fprintf(&b, "| ratio to the ceiling | **%.2f** |\n", ratio)
	}
	if f := res.Floor; f != nil && f.RestoreSeconds > 0 {
		fmt.Fprintf(&b, "| physical floor: the %d account tables dumped (`pg_dump -Fc -Z 0`, %.1f MB, %.1f s) and restored into an empty database (`pg_restore -j %d --no-owner`: schema, data, %d of %d indexes, constraints but the %d foreign keys to the supplier and import process, with the %d foreign keys the service checks per statement declared after the rows; PostgreSQL %s) | **%.1f s**, %.1f accounts/s (%d accounts restored) |\n",
			len(f.Tables), float64(f.DumpBytes)/1e6, f.DumpSeconds, f.RestoreJobs, f.RestoredIndexes, f.SourceIndexes, len(f.LeftOut), f.Redeclared, f.PgVersion, f.RestoreSeconds, float64(f.RestoredAccounts)/f.RestoreSeconds, f.RestoredAccounts)
		fmt.Fprintf(&b, "| end to end ÷ floor (goal ≤ 8) | **%.1f** |\n", res.TotalSeconds/f.RestoreSeconds)
	}
	if len(res.TenthRates) == 10 && res.TenthRates[0] > 0 {
		tenths := make([]string, 10)
		for i, r := range res.TenthRates {
			tenths[i] = fmt.Sprintf("%.0f", r)
		}
		fmt.Fprintf(&b, "| accounts/s by tenth of the accounts | %s |\n", strings.Join(tenths, ", "))
		fmt.Fprintf(&b, "| last tenth ÷ first tenth (goal ≥ 0.85) | **%.2f** |\n", res.TenthRates[9]/res.TenthRates[0])
	}
	fmt.Fprintf(&b, "| status reads | %d, p50 %.1f ms, **p99 %.1f ms**, max %.1f ms, %d errors |\n", res.StatusReads, res.StatusP50, res.StatusP99, res.StatusMax, res.StatusErrs)
	if res.StatusP99Uploading > 0 || res.StatusP99After > 0 {
		fmt.Fprintf(&b, "| status p99 of the reads sent while uploads stream in / after the last was accepted | **%.1f ms** / **%.1f ms** |\n", res.StatusP99Uploading, res.StatusP99After)
	}
	if up, after, ok := phaseP99s(res); ok {
		fmt.Fprintf(&b, "| status p99 per second, median / 90th percentile of the seconds | while uploads stream in: %.1f / %.1f ms; after: %.1f / %.1f ms |\n", up[0], up[1], after[0], after[1])
	}
	if len(res.JobStatusCodes)+len(res.AccountStatusCodes) > 0 {
		fmt.Fprintf(&b, "| status answers by code (0: no answer) | job status: %s; account v1 status: %s |\n", codeCounts(res.JobStatusCodes), codeCounts(res.AccountStatusCodes))
		fmt.Fprintf(&b, "| account v1 status 404 after the account's job was accepted (goal 0) | **%d** of %d such reads |\n", res.AccountNotFoundAccepted, res.AccountReadsAccepted)
	}
	fmt.Fprintf(&b, "| disk per account (database growth ÷ accounts, after CHECKPOINT) | %.1f KB |\n", res.DiskBytesPerAccount/1024)
	bk := res.Bookkeeping
	if bk != nil && bk.AccountBytes > 0 {
		fmt.Fprintf(&b, "| account tables per account (growth of the %d tables, heap + TOAST + indexes) | %.1f KB |\n", len(accountTables), bk.accountKB())
		fmt.Fprintf(&b, "| bookkeeping per account (every other table: processes, versions, events, attempts, job lines, …) | %.1f KB |\n", bk.bookkeepingKB())
		cb := res.Compacted
		if cb == nil || cb.Bookkeeping.AccountBytes <= 0 {
			fmt.Fprintf(&b, "| bookkeeping KB ÷ account KB when the jobs complete, before compaction (the goal ≤ 0.5 is for compacted jobs: not measured) | **%.2f** |\n", bk.ratio())
		} else {
			already := ""
			if cb.CompactedAtCompletion > 0 {
				already = fmt.Sprintf(" (%d of %d jobs already compacted by the worker)", cb.CompactedAtCompletion, cb.Jobs)
			}
			fmt.Fprintf(&b, "| bookkeeping KB ÷ account KB when the jobs complete, before compaction%s | **%.2f** |\n", already, bk.ratio())
			fmt.Fprintf(&b, "| compaction of the completed jobs (the worker's compactor, run by loadgen) / `VACUUM FULL` of the %d bookkeeping tables | %.1f s / %.1f s (%d of %d jobs compacted) |\n",
				cb.VacuumedTables, cb.CompactSeconds, cb.VacuumSeconds, cb.Compacted, cb.Jobs)
			fmt.Fprintf(&b, "| once compacted: account tables / bookkeeping per account | %.1f KB / %.1f KB |\n", cb.Bookkeeping.accountKB(), cb.Bookkeeping.bookkeepingKB())
			older := ""
			if cb.OlderTransactions > 0 {
				older = fmt.Sprintf(" (%d older transactions were still open: dead rows they may see are counted)", cb.OlderTransactions)
			}
			fmt.Fprintf(&b, "| bookkeeping KB ÷ account KB once the jobs are compacted, without dead rows (goal ≤ 0.5)%s | **%.2f** |\n", older, cb.Bookkeeping.ratio())
		}
	}
	fmt.Fprintf(&b, "| API peak RSS | %.1f MB |\n", float64(res.APIPeakKB)/1024)
	fmt.Fprintf(&b, "| worker peak RSS | %.1f MB |\n", float64(res.WorkerPeakKB)/1024)
	fmt.Fprintf(&b, "\n![accounts/s and status p99 over time](scale.png)\n")
	if bk != nil && bk.AccountBytes > 0 {
		fmt.Fprintf(&b, "\n## Where the bytes are\n\nEach table's growth over the run when the jobs complete, after a `CHECKPOINT` (`pg_total_relation_size`: heap, TOAST, indexes), largest first.\n\n%s", bk.markdown(12))
	}
	if cb := res.Compacted; cb != nil && cb.Bookkeeping.AccountBytes > 0 {
		fmt.Fprintf(&b, "\n## Where the bytes are once the jobs are compacted\n\nThe same, once the jobs are compacted and every bookkeeping table rewritten by `VACUUM FULL`.\n\n%s", cb.Bookkeeping.markdown(12))
	}
	md := b.String()
	if err := os.WriteFile(filepath.Join(dir, "scale.md"), []byte(md), 0o644); err != nil {
		return err
	}
	raw, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "scale.json"), raw, 0o644); err != nil {
		return err
	}
	fmt.Print(md)
	return nil
}

// codeCounts is "200 ×n, 404 ×m" in code order.
func codeCounts(m map[int]int) string {
	if len(m) == 0 {
		return "none"
	}
	codes := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%d ×%d", c, m[c])
	}
	return strings.Join(parts, ", ")
}

// phaseP99s is the median and the 90th percentile of the per-second
// status p99s while the uploads streamed in and after them.
func phaseP99s(res *scaleResult) (up, after [2]float64, ok bool) {
	var u, a []float64
	for _, s := range res.Samples {
		if s.StatusN == 0 {
			continue
		}
		if s.T < res.UploadSeconds {
			u = append(u, s.StatusP99)
		} else {
			a = append(a, s.StatusP99)
		}
	}
	if len(u) == 0 || len(a) == 0 {
		return up, after, false
	}
	q := func(xs []float64) [2]float64 {
		sort.Float64s(xs)
		return [2]float64{xs[len(xs)/2], xs[len(xs)*9/10]}
	}
	return q(u), q(a), true
}

// scaleReportCmd renders the report again from a run's scale.json (when
// the report's layout changed after the run).
func scaleReportCmd() *cobra.Command {
	var in, out string
	cmd := &cobra.Command{
		Use:   "scale-report",
		Short: "Render results/scale.md and scale.png again from a make bench-scale run's scale.json",
		RunE: func(*cobra.Command, []string) error {
			raw, err := os.ReadFile(in)
			if err != nil {
				return err
			}
			var res scaleResult
			if err := json.Unmarshal(raw, &res); err != nil {
				return fmt.Errorf("%s: %w", in, err)
			}
			return writeScale(&res, out)
		},
	}
	cmd.Flags().StringVar(&in, "in", "results/scale.json", "the run's results")
	cmd.Flags().StringVar(&out, "out", "results", "report folder")
	return cmd
}

// scaleChart draws accounts/s and status p99 per second.
func scaleChart(res *scaleResult, path string) error {
	rate, p99 := plot.New(), plot.New()
	rate.Title.Text, rate.X.Label.Text, rate.Y.Label.Text = "Accounts finished per second (5 s window)", "seconds since upload start", "accounts/s"
	p99.Title.Text, p99.X.Label.Text, p99.Y.Label.Text = "Status read p99 (per second)", "seconds since upload start", "ms"
	rp, lp := make(plotter.XYs, 0, len(res.Samples)), make(plotter.XYs, 0, len(res.Samples))
	for _, s := range res.Samples {
		rp = append(rp, plotter.XY{X: s.T, Y: s.Rate})
		if s.StatusN > 0 {
			lp = append(lp, plotter.XY{X: s.T, Y: s.StatusP99})
		}
	}
	for _, x := range []struct {
		p   *plot.Plot
		pts plotter.XYs
		c   color.RGBA
	}{{rate, rp, color.RGBA{R: 60, G: 120, B: 200, A: 255}}, {p99, lp, color.RGBA{R: 200, G: 80, B: 60, A: 255}}} {
		if len(x.pts) == 0 {
			continue
		}
		l, err := plotter.NewLine(x.pts)
		if err != nil {
			return err
		}
		l.Color = x.c
		x.p.Add(l)
	}
	return writeSideBySide(path, 1000, rate, p99)
}
