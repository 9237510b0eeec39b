package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

type runConfig struct {
	API, APIKey, Supplier, Team string
	Accounts, Parallel          int
	StatusRate                  int // status reads per second during the create phase
	PostImport                  bool
	Prefix                      string
	PaymentVendor               string // accounts bring a payment instruction at this vendor; "" none
}

// result is everything one run measured.
type result struct {
	Accounts                        int             `json:"accounts"`
	StageSeconds                    float64         `json:"stage_seconds"`
	CreateSeconds                   float64         `json:"create_seconds"`
	Completed                       int64           `json:"completed"`
	Failed                          int64           `json:"failed"`
	Throttled                       int64           `json:"throttled_429"`
	PostImportErrors                int64           `json:"post_import_errors"`
	PostImportSeconds               float64         `json:"post_import_seconds"`
	PostImportRate                  float64         `json:"post_import_requests_per_second"`
	CompletedAt                     []float64       `json:"-"` // seconds since the create phase began
	StatusLatencies                 []time.Duration `json:"-"`
	StatusErrors                    int64           `json:"status_errors"`
	StageRate                       float64         `json:"stage_requests_per_second"`
	EndToEndRate                    float64         `json:"end_to_end_accounts_per_second"`
	StatusP50, StatusP99, StatusMax time.Duration
	// StatusInFlight is the second open-loop reader: it reads accounts whose
	// create request is out and which are not COMPLETED yet.
	StatusInFlight readerStats `json:"status_in_flight"`
}

func run(ctx context.Context, cfg runConfig) (*result, error) {
	c := newClient(cfg.API, cfg.Parallel+2*cfg.StatusRate/10+4)
	if err := c.login(ctx, cfg.APIKey); err != nil {
		return nil, err
	}
	ids := make([]string, cfg.Accounts)
	bodies := make([][]byte, cfg.Accounts)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%07d", cfg.Prefix, i)
		bodies[i] = mustJSON(withInstruction(realisticAccount(cfg.Supplier, ids[i], i), cfg.PaymentVendor, i))
	}
	res := &result{Accounts: cfg.Accounts}

	// Phase 1: stage everything.
	start := time.Now()
	err := forEach(ctx, cfg.Parallel, cfg.Accounts, func(i int) error {
		r, err := c.do(ctx, http.MethodPost, "/v1/data-import/account-import-process/create-or-update/", bodies[i])
		if err != nil {
			return err
		}
		if r.status != http.StatusCreated && r.status != http.StatusOK {
			return fmt.Errorf("stage %s: %d %s", ids[i], r.status, r.body)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.StageSeconds = time.Since(start).Seconds()

	// Phase 2: create and poll until COMPLETED; status reads at a fixed rate
	// alongside. End-to-end is stage + create + COMPLETED, the writes the
	// pgbench account script does; post-import data is phase 3.
	createStart := time.Now()
	var mu sync.Mutex
	readerCtx, stopReader := context.WithCancel(ctx)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		statusReader(readerCtx, c, cfg, ids, res, &mu)
	}()
	pending := newInFlight()
	go func() {
		defer readers.Done()
		inFlightReader(readerCtx, c, cfg, pending, &res.StatusInFlight)
	}()
	completed := make([]bool, cfg.Accounts)
	err = forEach(ctx, cfg.Parallel, cfg.Accounts, func(i int) error {
		pending.add(ids[i])
		ok, err := createOne(ctx, c, cfg, ids[i], res)
		pending.remove(ids[i])
		if err != nil {
			return err
		}
		if !ok {
			atomic.AddInt64(&res.Failed, 1)
			return nil
		}
		completed[i] = true
		atomic.AddInt64(&res.Completed, 1)
		mu.Lock()
		res.CompletedAt = append(res.CompletedAt, time.Since(createStart).Seconds())
		mu.Unlock()
		return nil
	})
	stopReader()
	readers.Wait()
	if err != nil {
		return nil, err
	}
	res.CreateSeconds = time.Since(createStart).Seconds()

	// Phase 3: post-import notes and transactions on every created account.
	if cfg.PostImport {
		postStart := time.Now()
		err = forEach(ctx, cfg.Parallel, cfg.Accounts, func(i int) error {
			if completed[i] {
				postImport(ctx, c, cfg, ids[i], res)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		res.PostImportSeconds = time.Since(postStart).Seconds()
		res.PostImportRate = float64(2*res.Completed) / res.PostImportSeconds
	}
	res.StageRate = float64(cfg.Accounts) / res.StageSeconds
	res.EndToEndRate = float64(res.Completed) / (res.StageSeconds + res.CreateSeconds)
	sortDurations(res.StatusLatencies)
	res.StatusInFlight.finish()
	res.StatusP50, res.StatusP99, res.StatusMax = percentile(res.StatusLatencies, 0.50), percentile(res.StatusLatencies, 0.99), percentile(res.StatusLatencies, 1)
	return res, nil
}

// createOne creates an account as a partner would: 429 waits Retry-After,
// 202 polls the status until COMPLETED.
func createOne(ctx context.Context, c *client, cfg runConfig, id string, res *result) (bool, error) {
	body := mustJSON(map[string]any{"external_account_number": id, "import_supplier_code": cfg.Supplier, "operations_team_name": cfg.Team})
	for {
		r, err := c.do(ctx, http.MethodPost, "/v1/data-import/account-import-process/process/", body)
		if err != nil {
			return false, err
		}
		switch r.status {
		case http.StatusCreated:
			return true, nil
		case http.StatusTooManyRequests:
			atomic.AddInt64(&res.Throttled, 1)
			if err := sleep(ctx, max(r.retryAfter, 100*time.Millisecond)); err != nil {
				return false, err
			}
			continue
		case http.StatusAccepted:
			return pollCompleted(ctx, c, cfg, id)
		default:
			return false, fmt.Errorf("create %s: %d %s", id, r.status, r.body)
		}
	}
}

func pollCompleted(ctx context.Context, c *client, cfg runConfig, id string) (bool, error) {
	for {
		r, err := c.do(ctx, http.MethodGet, "/v1/data-import/account-transfer-status/"+cfg.Supplier+"/"+id+"/", nil)
		if err != nil {
			return false, err
		}
		var st struct{ Status string }
		_ = json.Unmarshal(r.body, &st)
		switch st.Status {
		case "COMPLETED":
			return true, nil
		case "UNKNOWN":
			return false, nil
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return false, err
		}
	}
}

// postImport adds two notes and five transactions to the created account.
func postImport(ctx context.Context, c *client, cfg runConfig, id string, res *result) {
	day := time.Now().UTC().Format("2006-01-02")
	notes := mustJSON(map[string]any{"import_supplier": cfg.Supplier, "external_account_number": id, "notes": []map[string]any{
		{"body": "Post-import note one for " + id}, {"body": "Post-import note two", "is_pinned": true},
	}})
	var txs []map[string]any
	for k, typ := range []string{"CHARGE", "CREDIT", "PAYMENT", "REPAYMENT", "CHARGE"} {
		t := map[string]any{"transaction_id": fmt.Sprintf("%s-post-%d", id, k), "transaction_date": day, "amount": "3.21", "type": typ}
		switch typ {
		case "CHARGE":
			t["reason"] = "IMPORTED_CHARGE"
		case "CREDIT":
			t["reason"] = "IMPORTED_CREDIT"
		default:
			t["payment_type"] = "DIRECT_CREDIT"
		}
		txs = append(txs, t)
	}
	transactions := mustJSON(map[string]any{"import_supplier": cfg.Supplier, "external_account_number": id, "transactions": txs})
	for path, body := range map[string][]byte{"/v1/data-import/notes/create/": notes, "/v1/data-import/transactions/create/": transactions} {
		r, err := c.do(ctx, http.MethodPost, path, body)
		if err != nil || r.status != http.StatusCreated {
			atomic.AddInt64(&res.PostImportErrors, 1)
		}
	}
}

// statusReader reads random accounts' status at a fixed rate, like a
// partner dashboard, and records each latency.
func statusReader(ctx context.Context, c *client, cfg runConfig, ids []string, res *result, mu *sync.Mutex) {
	readStatus(ctx, c, cfg, func() (string, bool) { return ids[rand.IntN(len(ids))], true }, func(d time.Duration, ok bool) {
		if !ok {
			atomic.AddInt64(&res.StatusErrors, 1)
			return
		}
		mu.Lock()
		res.StatusLatencies = append(res.StatusLatencies, d)
		mu.Unlock()
	})
}

// inFlightReader reads, at the same fixed rate and open-loop as
// statusReader, a random account whose creation is under way, as a partner
// polling what it just submitted; ticks with nothing in flight are skipped.
func inFlightReader(ctx context.Context, c *client, cfg runConfig, pending *inFlight, st *readerStats) {
	readStatus(ctx, c, cfg, func() (string, bool) {
		id, ok := pending.pick()
		if !ok {
			st.skip()
		}
		return id, ok
	}, func(d time.Duration, ok bool) {
		if !ok {
			st.fail()
			return
		}
		st.record(d)
	})
}

// readStatus reads the v1 status of pick's account StatusRate times a
// second until ctx ends, open-loop: each read in its own goroutine, never
// waiting for the previous answer; record gets each latency (ok: 200).
func readStatus(ctx context.Context, c *client, cfg runConfig, pick func() (string, bool), record func(time.Duration, bool)) {
	if cfg.StatusRate <= 0 {
		return
	}
	tick := time.NewTicker(time.Second / time.Duration(cfg.StatusRate))
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		id, ok := pick()
		if !ok {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			r, err := c.do(context.WithoutCancel(ctx), http.MethodGet, "/v1/data-import/account-transfer-status/"+cfg.Supplier+"/"+id+"/", nil)
			record(time.Since(t0), err == nil && r.status == http.StatusOK)
		}()
	}
}

// forEach runs fn for 0..n-1 on parallel goroutines and stops at the first error.
func forEach(ctx context.Context, parallel, n int, fn func(int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

func sortDurations(d []time.Duration) {
	sort.Slice(d, func(a, b int) bool { return d[a] < d[b] })
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
