// Package app assembles the API from configuration, so that cmd/api and the
// integration tests run exactly the same wiring.
package app

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"

	"github.com/gridshift/dataimport/pkg/auth"
	"github.com/gridshift/dataimport/pkg/config"
	"github.com/gridshift/dataimport/pkg/console"
	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/documents"
	"github.com/gridshift/dataimport/pkg/httpapi"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
	"github.com/gridshift/dataimport/pkg/redis"
	"github.com/gridshift/dataimport/pkg/webhook"
)

// API is the assembled HTTP service and the connections it owns.
type API struct {
	Handler http.Handler
	// Console is the operator console's handler, nil unless CONSOLE_ADDR is
	// set; it is served on its own listener, never on the partner port.
	Console  http.Handler
	DB       *postgres.DB
	Redis    goredis.UniversalClient
	Registry *prometheus.Registry
	queue    *queue.Client
	inspect  *asynq.Inspector
	stop     context.CancelFunc
	beating  chan struct{} // closed when the heartbeat has stopped (and the row is deleted)
}

// NewAPI connects to Postgres and Redis and builds the router.
func NewAPI(ctx context.Context, cfg config.Config, log *slog.Logger) (*API, error) {
	c, err := connect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	db, rdb := c.db, c.rdb
	ready := map[string]httpapi.Pinger{"postgres": db, "redis": redis.Pinger{Client: rdb}}
	if cfg.DatabaseReadURL != "" {
		// Status and list reads go to the replica (only the api serves them).
		if err := db.UseReadReplica(ctx, cfg.DatabaseReadURL); err != nil {
			c.close()
			return nil, err
		}
		ready["postgres_replica"] = db.ReadReplica()
	} else if err := db.SeparateReads(ctx); err != nil {
		c.close()
		return nil, err
	}
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	a := &API{DB: db, Redis: rdb, Registry: newRegistry(), queue: queue.NewClient(c.redisOpt), stop: stop, beating: make(chan struct{})}
	registerPools(a.Registry, db)
	vendors := paymentVendors(cfg, log)
	// Workers read the vendors this replica accepts from its heartbeat: the
	// first one is written before the API serves anything.
	rep := newReplica(db, log, "api", cfg, vendors.Names())
	rep.beat(ctx)
	go func() {
		defer close(a.beating)
		rep.run(bg)
	}()
	notifier := queue.NewNotifier(rdb, OutcomeChannelPrefix)
	go notifier.Run(bg)
	go db.WatchControl(bg, log)                   // keys, suppliers, teams and the limit cached in memory
	go db.RunEventRelay(bg, EventRelayEvery, log) // numbers events for the feed (one process at a time)
	go db.WatchFeed(bg, log)                      // one LISTEN wakes every feed long-poll of this process
	stageRows := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "dataimport_stage_statement_rows",
		Help: "Staging requests written per statement (concurrent requests share one).", Buckets: prometheus.ExponentialBuckets(1, 2, 7)})
	a.Registry.MustRegister(stageRows)
	db.ObserveStaging(func(rows int) { stageRows.Observe(float64(rows)) })

	secret, err := auth.LoadSecret(ctx, db, cfg.TokenSecret)
	if err != nil {
		a.Close()
		return nil, err
	}
	authSvc := auth.NewService(db, auth.NewIssuer(secret, cfg.TokenTTL, cfg.RefreshTokenTTL, nil))
	schema, err := auth.Schema(authSvc)
	if err != nil {
		a.Close()
		return nil, err
	}
	docs, err := documents.Open(bg, cfg.DocumentStoreURL) // closed when a.stop cancels bg
	if err != nil {
		a.Close()
		return nil, err
	}
	a.Handler = httpapi.New(httpapi.Config{MaxBodyBytes: cfg.MaxBodyBytes, TrustedProxies: cfg.TrustedProxies, ProcessWait: cfg.ProcessWait,
		IdempotencyTTL: cfg.IdempotencyTTL, MaxJobBytes: cfg.MaxJobBytes, Uploads: httpapi.UploadLimits{
			IdleTimeout: cfg.UploadIdleTimeout, PerOrg: cfg.MaxUploadsPerOrg, PerReplica: cfg.MaxUploadsPerReplica,
			MaxLines: cfg.MaxJobLines, InvalidAfter: cfg.JobInvalidCheckAfter, MaxInvalidRatio: cfg.MaxJobInvalidRatio,
			MaxGzipRatio: cfg.MaxGzipRatio}}, httpapi.Deps{
		Store:    db,
		Auth:     authSvc,
		Schema:   schema,
		Creator:  queue.Coordinator{Client: a.queue, Semaphore: queue.NewSemaphore(rdb, SlotsKey, cfg.SlotLease).WithOwnedRecount(db.InProgressSlotHolders), Notifier: notifier},
		Throttle: redis.NewFailureThrottle(rdb, "throttle:login:", 10),
		Ready:    ready,
		Logger:   log,
		Registry: a.Registry,
		Vendors:  vendors,

		Documents:      docs,
		Idempotency:    db,
		Jobs:           db,
		Failures:       db,
		Reconciliation: db,

		Webhooks:      db,
		WebhookGuard:  webhook.Guard{AllowPrivate: cfg.WebhookAllowPrivate},
		WebhookSender: webhook.NewSender(webhook.Guard{AllowPrivate: cfg.WebhookAllowPrivate}, cfg.WebhookTimeout),
		UploadSlots:   redis.NewUploadSlots(rdb, UploadSlotsKeyPrefix, UploadSlotLease),
	})
	if cfg.ConsoleAddr != "" {
		if err := a.buildConsole(ctx, cfg, c, rdb, log); err != nil {
			a.Close()
			return nil, err
		}
	}
	return a, nil
}

// buildConsole assembles the operator console (CONSOLE_ADDR).
func (a *API) buildConsole(ctx context.Context, cfg config.Config, c conns, rdb goredis.UniversalClient, log *slog.Logger) error {
	key, err := a.DB.ConsoleCSRFKey(ctx)
	if err != nil {
		return err
	}
	a.inspect = asynq.NewInspector(c.redisOpt)
	a.Console, err = console.New(console.Config{CookieSecure: cfg.ConsoleCookieSecure, SessionTTL: cfg.ConsoleSessionTTL, CSRFKey: key,
		OverviewCacheTTL: cfg.ConsoleOverviewCacheTTL, TrustedProxies: cfg.TrustedProxies},
		console.Deps{Store: a.DB, Inspector: a.inspect, Throttle: redis.NewFailureThrottle(rdb, "throttle:console-login:", 10),
			Logger: log.With("component", "console"), Webhooks: console.StoreWebhooks(a.DB),
			BulkJobs: a.consoleBulkJobs,
			Replicas: func(ctx context.Context) ([]postgres.ReplicaRow, error) { return a.DB.LiveReplicas(ctx, ReplicaTTL) },
		})
	return err
}

// consoleBulkJobs is the overview's bulk-job section: jobs under way, then
// those finished in the last day.
func (a *API) consoleBulkJobs(ctx context.Context) ([]console.BulkJob, error) {
	jobs, err := a.DB.ConsoleJobs(ctx, 20)
	if err != nil {
		return nil, err
	}
	out := make([]console.BulkJob, len(jobs))
	for i, j := range jobs {
		out[i] = console.BulkJob{ID: strconv.FormatInt(j.ID, 10), Supplier: j.Supplier, Status: string(j.State), Done: j.Done, Total: j.Total}
		if j.CompactedAt != nil {
			out[i].Compacted = j.CompactedAt.UTC().Format("2006-01-02 15:04:05Z")
		}
		switch j.Reconciliation {
		case dataimport.ReconciliationMatch:
			out[i].Control = j.Reconciliation
		case dataimport.ReconciliationMismatch:
			out[i].Control = j.Reconciliation + ": " + strings.Join(j.Mismatched, ", ")
		}
	}
	return out, nil
}

// Drain ends the feed long-polls in flight (they answer with what they
// have) so that a graceful shutdown is not held up by them; serve it with
// http.Server.RegisterOnShutdown.
func (a *API) Drain() { a.DB.StopFeedWaits() }

// Close releases the connections.
func (a *API) Close() error {
	a.stop()
	<-a.beating
	var inspect error
	if a.inspect != nil {
		inspect = a.inspect.Close()
	}
	return errors.Join(a.queue.Close(), inspect, a.DB.Close(), a.Redis.Close())
}

// EventRelayEvery is how often a process numbers newly committed events (the
// floor of the notification lag).
const EventRelayEvery = 100 * time.Millisecond

// Redis names shared by the API and the workers.
const (
	SlotsKey             = "dataimport:slots"
	OutcomeChannelPrefix = "dataimport:outcome:"
	// UploadSlotsKeyPrefix + organisation id: the organisation's bulk
	// uploads in flight (MAX_UPLOADS_PER_ORG).
	UploadSlotsKeyPrefix = "dataimport:upload-slots:"
)

// UploadSlotLease is how long an upload's slot outlives its last renewal
// (every third of it): a dead replica's uploads free their slots in this.
const UploadSlotLease = 30 * time.Second
