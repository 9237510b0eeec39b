package app

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"

	"github.com/gridshift/dataimport/jobs"
	"github.com/gridshift/dataimport/pkg/config"
	"github.com/gridshift/dataimport/pkg/queue"
	"github.com/gridshift/dataimport/pkg/webhook"
)

// WebhookInFlightPrefix keys the per-endpoint in-flight semaphores.
const WebhookInFlightPrefix = "dataimport:webhook-inflight:"

// wireWebhooks builds the webhook side of the worker: a second asynq server
// on the webhook queue only, so slow receivers hold delivery workers
// (WEBHOOK_CONCURRENCY), never creation workers; the per-endpoint in-flight
// bound; and the dispatcher that schedules deliveries from the feed.
func (w *Worker) wireWebhooks(ctx context.Context, cfg config.Config, redisOpt asynq.RedisConnOpt, rdb goredis.UniversalClient) {
	metrics := jobs.NewWebhookMetrics(w.Registry)
	h := &jobs.WebhookHandler{Store: w.DB, Queue: w.queue, Metrics: metrics, Log: w.log, Now: time.Now,
		Sender:   webhook.NewSender(webhook.Guard{AllowPrivate: cfg.WebhookAllowPrivate}, cfg.WebhookTimeout),
		Lease:    jobs.AttemptLease(cfg.WebhookTimeout),
		Schedule: webhook.ScaledSchedule(cfg.WebhookRetryBase),
		InFlight: &queue.EndpointInFlight{Client: rdb, Prefix: WebhookInFlightPrefix, Limit: cfg.WebhookEndpointConcurrency,
			Lease: 2 * jobs.AttemptLease(cfg.WebhookTimeout)}}
	w.hooksMux = asynq.NewServeMux()
	w.hooksMux.Handle(queue.TypeWebhookDelivery, h)
	w.hooks = asynq.NewServer(redisOpt, asynq.Config{
		Concurrency:              cfg.WebhookConcurrency,
		TaskCheckInterval:        cfg.WorkerPoll,
		DelayedTaskCheckInterval: 100 * time.Millisecond, // retries are due to the second; scaled ones in tests sooner
		Queues:                   map[string]int{queue.QueueWebhooks: 1},
		ShutdownTimeout:          cfg.ShutdownTimeout,
		Logger:                   asynqLogger{w.log},
		// A busy endpoint is not failing: look again soon, spread out.
		IsFailure: func(err error) bool { return !errors.Is(err, jobs.ErrEndpointBusy) },
		RetryDelayFunc: func(n int, err error, t *asynq.Task) time.Duration {
			if errors.Is(err, jobs.ErrEndpointBusy) {
				return 20*time.Millisecond + rand.N(80*time.Millisecond)
			}
			return retryDelay(n, err, t)
		},
	})
	w.dispatcher = &jobs.WebhookDispatcher{Store: w.DB, Queue: w.queue, Log: w.log, Every: cfg.ReconcileEvery,
		Grace: cfg.ReconcileGrace}
	w.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dataimport_webhook_endpoints_disabled",
		Help: "Webhook endpoints disabled (by a 410 from the receiver or by an operator)."}, func() float64 {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		n, err := w.DB.CountDisabledWebhooks(qctx)
		if err != nil {
			return -1
		}
		return float64(n)
	}))
}
