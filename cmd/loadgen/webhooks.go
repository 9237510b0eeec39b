package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/webhook"
)

// webhookCmd measures webhook delivery lag: events are committed open-loop
// at a fixed rate (one transaction each, as the pipeline writes them) while
// a local receiver, registered as an endpoint of the organisation,
// verifies each delivery's signature and notes when it arrived. Lag is
// arrival minus the commit's return: relay, NOTIFY, dispatcher, queue and
// HTTP. The worker must run with WEBHOOK_ALLOW_PRIVATE=true (the receiver is
// on 127.0.0.1).
func webhookCmd() *cobra.Command {
	var dbURL, org, supplier, outDir string
	var rate, seconds int
	cmd := &cobra.Command{
		Use:   "webhooks",
		Short: "Webhook delivery lag p99 from commit to receipt at a fixed event rate",
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := runWebhookLag(cmd.Context(), dbURL, org, supplier, rate, time.Duration(seconds)*time.Second)
			if err != nil {
				return err
			}
			md := res.markdown()
			fmt.Print(md)
			if outDir == "" {
				return nil
			}
			f, err := os.OpenFile(filepath.Join(outDir, "latest.md"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteString("\n" + md)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&dbURL, "database-url", os.Getenv("DATABASE_URL"), "the service's database")
	f.StringVar(&org, "org", "Bench Partner", "organisation the endpoint belongs to")
	f.StringVar(&supplier, "supplier", "BENCH_ENERGY", "a supplier granted to it")
	f.IntVar(&rate, "rate", 200, "events committed per second (open loop)")
	f.IntVar(&seconds, "seconds", 20, "how long events are committed")
	f.StringVar(&outDir, "out", "results", "append the figures to <out>/latest.md (empty: print only)")
	return cmd
}

type webhookLag struct {
	Rate, Sent, Received, BadSigs int
	Achieved                      float64
	P50, P95, P99, Max            time.Duration
}

func (r webhookLag) markdown() string {
	return fmt.Sprintf("## Webhook delivery lag\n\n%d events committed open-loop at %d/s (achieved %.0f/s), one transaction each; "+
		"a local receiver verified every signature with the Standard Webhooks library. Lag is from the commit's return to the request's arrival "+
		"(relay, NOTIFY, dispatcher, asynq, HTTP).\n\n| target | measured | goal | met |\n|---|---|---|---|\n"+
		"| Webhook delivery lag p99 at %d events/s | p50 %s, p95 %s, **p99 %s**, max %s (%d of %d received, %d bad signatures) | p99 ≤ 1 s | %s |\n",
		r.Sent, r.Rate, r.Achieved, r.Rate, ms(r.P50), ms(r.P95), ms(r.P99), ms(r.Max), r.Received, r.Sent, r.BadSigs,
		map[bool]string{true: "yes", false: "**no**"}[r.P99 <= time.Second && r.Received == r.Sent && r.BadSigs == 0])
}

func runWebhookLag(ctx context.Context, dbURL, org, supplier string, rate int, d time.Duration) (webhookLag, error) {
	res := webhookLag{Rate: rate}
	var (
		mu       sync.Mutex
		arrived  = map[string]time.Time{}
		bad      atomic.Int64
		verifier *standardwebhooks.Webhook
	)
	secret, err := webhook.NewSecret()
	if err != nil {
		return res, err
	}
	if verifier, err = standardwebhooks.NewWebhook(secret); err != nil {
		return res, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		body, _ := io.ReadAll(r.Body)
		if verifier.Verify(body, r.Header) != nil {
			bad.Add(1)
		}
		mu.Lock()
		if _, ok := arrived[r.Header.Get("webhook-id")]; !ok {
			arrived[r.Header.Get("webhook-id")] = at
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	db, err := postgres.Open(ctx, dbURL)
	if err != nil {
		return res, err
	}
	defer db.Close()
	if _, err := db.CreateWebhookEndpoint(ctx, postgres.NewWebhookEndpoint{Organisation: org, URL: "http://" + ln.Addr().String() + "/hooks",
		Secret: secret}); err != nil {
		return res, fmt.Errorf("register the receiver: %w", err)
	}
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return res, err
	}
	defer pool.Close()
	n := rate * int(d/time.Second)
	var procs []int64
	rows, err := pool.Query(ctx, `INSERT INTO import_processes (supplier_id, external_account_number, staged_version)
		SELECT s.id, 'WH-' || g, 1 FROM import_suppliers s, generate_series(1, $2) g WHERE s.code = $1
		ON CONFLICT DO NOTHING RETURNING id`, supplier, min(n, 1000))
	if err != nil {
		return res, err
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return res, err
		}
		procs = append(procs, id)
	}
	if err := rows.Err(); err != nil || len(procs) == 0 {
		return res, fmt.Errorf("bench processes for %s: %d made, %v", supplier, len(procs), err)
	}

	// Open loop: one event every 1/rate, whether or not earlier ones have
	// committed.
	committed := make(map[string]time.Time, n)
	var cmu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	for i := range n {
		<-tick.C
		wg.Go(func() {
			var id int64
			err := pool.QueryRow(ctx, `INSERT INTO import_process_events (process_id, event, data) VALUES ($1, $2, $3::jsonb) RETURNING id`,
				procs[i%len(procs)], dataimport.EventErrored, `{"attempt": 1, "error": {"code": "server_error", "detail": "Bench.", "domain": "processing"}}`).Scan(&id)
			at := time.Now()
			if err != nil {
				fmt.Fprintln(os.Stderr, "event insert:", err)
				return
			}
			cmu.Lock()
			committed[dataimport.FeedEventID(id)] = at
			cmu.Unlock()
		})
	}
	tick.Stop()
	wg.Wait()
	res.Achieved = float64(n) / time.Since(start).Seconds()
	res.Sent = len(committed)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		got := len(arrived)
		mu.Unlock()
		if got >= res.Sent {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var lags []time.Duration
	for id, c := range committed {
		if a, ok := arrived[id]; ok {
			lags = append(lags, max(a.Sub(c), 0))
		}
	}
	slices.Sort(lags)
	res.Received, res.BadSigs = len(lags), int(bad.Load())
	res.P50, res.P95, res.P99 = percentile(lags, 0.5), percentile(lags, 0.95), percentile(lags, 0.99)
	if len(lags) > 0 {
		res.Max = lags[len(lags)-1]
	}
	return res, nil
}
