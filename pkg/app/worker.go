package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	goredis "github.com/redis/go-redis/v9"

	"github.com/gridshift/dataimport/jobs"
	"github.com/gridshift/dataimport/pkg/config"
	"github.com/gridshift/dataimport/pkg/email"
	"github.com/gridshift/dataimport/pkg/httpapi"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
	"github.com/gridshift/dataimport/pkg/redis"
)

// Worker is an assembled worker process: the asynq server, its handlers and
// the reconciler.
type Worker struct {
	DB         *postgres.DB
	Redis      goredis.UniversalClient
	Registry   *prometheus.Registry
	Probes     http.Handler
	server     *asynq.Server
	mux        *asynq.ServeMux
	hooks      *asynq.Server // the webhook queue's own server (WEBHOOK_CONCURRENCY)
	hooksMux   *asynq.ServeMux
	dispatcher *jobs.WebhookDispatcher
	dispatched chan struct{} // closed when the dispatcher has stopped
	queue      *queue.Client
	inspector  *asynq.Inspector
	reconciler *jobs.Reconciler
	log        *slog.Logger
	sweeper    *jobs.IdempotencySweeper
	compactor  *jobs.JobCompactor
	compacted  chan struct{} // closed when the compactor has stopped
	stats      *jobs.StatisticsKeeper
	stop       context.CancelFunc
	done       chan struct{}
	swept      chan struct{} // closed when the sweeper has stopped
	analyzed   chan struct{} // closed when the statistics keeper has stopped
	pacer      *jobs.Pacer
	paced      chan struct{} // closed when the pacer has stopped reading the receiving jobs
	replica    *replica
	beating    chan struct{} // closed when the heartbeat has stopped (and the row is deleted)
}

// NewWorker connects and wires the handlers.
func NewWorker(ctx context.Context, cfg config.Config, log *slog.Logger) (*Worker, error) {
	// The worker's sessions do its batch work inside Postgres: they run at
	// its niceness too, where they can (see postgres.WithSessionNice).
	c, err := connect(ctx, cfg, postgres.WithSessionNice(cfg.BatchNice, log))
	if err != nil {
		return nil, err
	}
	db, rdb, redisOpt := c.db, c.rdb, c.redisOpt
	db.SetCreationWriters(cfg.WorkerDBWriters)
	w := &Worker{DB: db, Redis: rdb, Registry: newRegistry(), queue: queue.NewClient(redisOpt),
		inspector: asynq.NewInspector(redisOpt), log: log, done: make(chan struct{}), swept: make(chan struct{}), compacted: make(chan struct{}), analyzed: make(chan struct{}),
		dispatched: make(chan struct{}), paced: make(chan struct{}), beating: make(chan struct{})}
	registerPools(w.Registry, db)
	slots := queue.NewSemaphore(rdb, SlotsKey, cfg.SlotLease).WithOwnedRecount(db.InProgressSlotHolders)
	held := newCountingSlots(slots) // the creation handlers' slots: this replica's busy count
	vendors := paymentVendors(cfg, log)
	w.replica = newReplica(db, log, "worker", cfg, vendors.Names())
	w.replica.busy = held.Busy
	lookup := clusterVendors{own: vendors, replica: w.replica}
	notifier := queue.NewNotifier(rdb, OutcomeChannelPrefix)
	metrics := jobs.NewMetrics(w.Registry)
	w.registerGauges(ctx, slots)

	brakes := &jobs.Brakes{Store: db, Log: log}
	create := &jobs.CreateAccountHandler{Store: db, Slots: held, Notify: notifier, Queue: w.queue, Metrics: metrics,
		Vendors: lookup, Log: log, Now: time.Now, RenewEvery: cfg.SlotLease / 4, Brakes: brakes}
	sender, err := email.NewSender(cfg.SMTPURL, cfg.SMTPFrom)
	if err != nil {
		c.close()
		return nil, fmt.Errorf("SMTP_URL: %w", err)
	}
	w.pacer = &jobs.Pacer{Receiving: db.ReceivingLines, Log: log}
	bulk := &jobs.BulkJobHandler{Store: db, Slots: held, Queue: w.queue, Vendors: lookup, Log: log, Now: time.Now, Lease: cfg.JobLease,
		Pacer: w.pacer, Brakes: brakes}
	w.Registry.MustRegister(&jobs.BulkJobCollector{Store: db, Log: log},
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "dataimport_bulk_rounds_held_seconds_total",
			Help: "Time this worker's bulk job rounds waited for fast uploads to finish arriving (see jobs.Pacer)."},
			func() float64 { return w.pacer.Held().Seconds() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dataimport_bulk_receiving_lines_per_second",
			Help: "Lines a second the cluster's uploads were received at, as this worker last read it."},
			func() float64 { return w.pacer.Rate() }))
	w.mux = jobs.NewMux(jobs.Deps{CreateAccount: create, BulkJob: bulk, WelcomeEmail: &jobs.WelcomeEmailHandler{Store: db, Sender: sender,
		Metrics: jobs.NewWelcomeMetrics(w.Registry), Log: log}})
	w.reconciler = &jobs.Reconciler{Store: db, Tasks: w.inspector, Queue: w.queue, Slots: slots, Notify: notifier,
		Emails: db, Jobs: db, Log: log, Every: cfg.ReconcileEvery, Grace: cfg.ReconcileGrace, LostUploadAfter: cfg.UploadLostAfter}
	w.sweeper = &jobs.IdempotencySweeper{Store: db, Log: log, Every: idempotencySweepEvery}
	w.compactor = &jobs.JobCompactor{Store: db, Log: log, Every: cfg.JobCompactEvery, After: cfg.JobCompactAfter, Pause: jobs.CompactPause}
	w.stats = &jobs.StatisticsKeeper{Store: db, Log: log, Every: analyzeEvery}

	w.server = asynq.NewServer(redisOpt, asynq.Config{
		Concurrency: cfg.WorkerConcurrency,
		// An idle worker checks for work this often; 20 ms keeps partner
		// latency low for a few Redis commands a second per replica.
		TaskCheckInterval:        cfg.WorkerPoll,
		DelayedTaskCheckInterval: time.Second,
		Queues:                   map[string]int{queue.QueueAccounts: 6, queue.QueueEmails: 1},
		ShutdownTimeout:          cfg.ShutdownTimeout,
		Logger:                   asynqLogger{log},
		RetryDelayFunc:           retryDelay,
		// A scheduled account waiting for its window or a slot is not failing.
		IsFailure: func(err error) bool { return !errors.Is(err, jobs.ErrWaiting) },
		ErrorHandler: asynq.ErrorHandlerFunc(func(ctx context.Context, t *asynq.Task, err error) {
			retried, _ := asynq.GetRetryCount(ctx)
			maxRetry, _ := asynq.GetMaxRetry(ctx)
			if t.Type() == queue.TypeCreateAccount && (retried >= maxRetry || errors.Is(err, asynq.SkipRetry)) {
				create.GiveUp(context.WithoutCancel(ctx), t, err)
			}
		}),
	})
	w.wireWebhooks(ctx, cfg, redisOpt, rdb)
	w.Probes = httpapi.ProbeHandler(map[string]httpapi.Pinger{"postgres": db, "redis": redis.Pinger{Client: rdb}, "payment_vendors": w.replica},
		map[string]http.Handler{"/metrics": promhttp.HandlerFor(w.Registry, promhttp.HandlerOpts{})})
	return w, nil
}

// retryDelay backs off exponentially from 1 s to a minute, with jitter so
// that a recovered database is not hit by every retry at once; an attempt
// waiting to start looks again within a second.
func retryDelay(n int, err error, _ *asynq.Task) time.Duration {
	if errors.Is(err, jobs.ErrHeld) {
		// Held by a Paused supplier: resumes within a couple of seconds of
		// an operator's Ongoing, without thousands of looks a second.
		return time.Second + rand.N(time.Second)
	}
	if errors.Is(err, jobs.ErrWaiting) {
		// Slots free within a second or so: look again soon, spread out.
		return 250*time.Millisecond + rand.N(750*time.Millisecond)
	}
	d := time.Second << min(n, 6)
	return d/2 + rand.N(d/2+1)
}

func (w *Worker) registerGauges(ctx context.Context, slots *queue.Semaphore) {
	w.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dataimport_accounts_in_progress",
			Help: "Accounts holding a concurrency slot (cluster-wide)."}, func() float64 {
			n, err := slots.InUse(ctx)
			if err != nil {
				return -1
			}
			return float64(n)
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "dataimport_creation_shared_transactions_total",
			Help: "Per-account creation transactions that carried several accounts at once (group commit)."}, func() float64 {
			n, _ := postgres.CreationGroupStats()
			return float64(n)
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "dataimport_creation_shared_accounts_total",
			Help: "Accounts created in shared per-account creation transactions (divided by the transactions: the batch size)."}, func() float64 {
			_, n := postgres.CreationGroupStats()
			return float64(n)
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dataimport_queue_depth",
			Help: "Account-creation tasks waiting or running in the queue (cluster-wide)."}, func() float64 {
			qi, err := w.inspector.GetQueueInfo(queue.QueueAccounts)
			if err != nil {
				return 0
			}
			return float64(qi.Pending + qi.Active + qi.Retry + qi.Scheduled)
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dataimport_scheduled_accounts_waiting",
			Help: "Accounts scheduled (v2 PENDING) and not started yet: waiting for their window or a slot (cluster-wide)."}, func() float64 {
			// A scrape must not hang on a slow database.
			qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			n, err := w.DB.CountScheduledWaiting(qctx)
			if err != nil {
				return -1
			}
			return float64(n)
		}),
	)
}

// Start runs the asynq server and the reconciler in the background.
func (w *Worker) Start() error {
	// The first heartbeat before any task is taken: the vendors the API
	// accepts are known (and readiness and the console right) from the start.
	w.replica.beat(context.Background())
	if err := w.server.Start(w.mux); err != nil {
		return fmt.Errorf("start asynq server: %w", err)
	}
	if err := w.hooks.Start(w.hooksMux); err != nil {
		w.server.Shutdown()
		return fmt.Errorf("start webhook asynq server: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	w.stop = stop
	go func() {
		defer close(w.beating)
		w.replica.run(ctx)
	}()
	go w.DB.RunEventRelay(ctx, EventRelayEvery, w.log)
	go w.DB.WatchFeed(ctx, w.log) // wakes the webhook dispatcher on new events
	go func() {
		defer close(w.dispatched)
		w.dispatcher.Run(ctx)
	}()
	go func() {
		defer close(w.done)
		w.reconciler.Run(ctx)
	}()
	go func() {
		defer close(w.swept)
		w.sweeper.Run(ctx)
	}()
	go func() {
		defer close(w.compacted)
		w.compactor.Run(ctx)
	}()
	go func() {
		defer close(w.analyzed)
		w.stats.Run(ctx)
	}()
	go func() {
		defer close(w.paced)
		w.pacer.Run(ctx)
	}()
	return nil
}

// idempotencySweepEvery paces the deletion of expired idempotency keys: a
// key outliving IDEMPOTENCY_TTL by a minute is harmless (it is no longer
// replayed), and every worker sweeps.
const idempotencySweepEvery = time.Minute

// analyzeEvery paces the statistics keeper: at a thousand accounts a second
// a table grows by a tenth well within it until it holds some hundred
// thousand rows, and then a tenth takes longer than this anyway.
const analyzeEvery = 30 * time.Second

// Shutdown stops taking tasks and waits (up to SHUTDOWN_TIMEOUT) for the
// running ones; unfinished ones go back to the queue for another replica.
func (w *Worker) Shutdown() {
	if w.stop != nil {
		w.stop()
		<-w.done
		<-w.swept
		<-w.compacted
		<-w.analyzed
		<-w.dispatched
		<-w.paced
		<-w.beating
	}
	w.hooks.Shutdown()
	w.server.Shutdown()
	_ = w.inspector.Close()
	_ = w.queue.Close()
	_ = w.DB.Close()
	_ = w.Redis.Close()
}

// asynqLogger routes asynq's own logs into our JSON logs.
type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...), "component", "asynq") }
func (a asynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...), "component", "asynq") }
func (a asynqLogger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...), "component", "asynq") }
func (a asynqLogger) Error(args ...any) { a.l.Error(fmt.Sprint(args...), "component", "asynq") }
func (a asynqLogger) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...), "component", "asynq") }
