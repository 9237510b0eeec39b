package jobs

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Webhook delivery outcomes (the outcome label).
const (
	WebhookDelivered = "delivered" // 2xx
	WebhookRetry     = "retry"     // anything else, another attempt is scheduled
	WebhookGaveUp    = "failed"    // no attempt left (about 24 h of retries)
	WebhookGone      = "gone"      // 410: the endpoint was disabled
)

// WebhookMetrics are the delivery metrics, served by the worker's /metrics.
type WebhookMetrics struct {
	outcomes *prometheus.CounterVec
	lag      prometheus.Histogram
}

// NewWebhookMetrics registers the webhook metrics on reg.
func NewWebhookMetrics(reg prometheus.Registerer) *WebhookMetrics {
	m := &WebhookMetrics{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dataimport_webhook_deliveries_total",
			Help: "Webhook delivery attempts by outcome (delivered, retry, failed: given up, gone: 410 disabled the endpoint).",
		}, []string{"outcome"}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "dataimport_webhook_delivery_lag_seconds",
			Help:    "From an event's commit (its occurred_at) to the receiver's 2xx.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 7200, 86400},
		}),
	}
	reg.MustRegister(m.outcomes, m.lag)
	return m
}

func (m *WebhookMetrics) observe(outcome string, lag time.Duration) {
	if m == nil {
		return
	}
	m.outcomes.WithLabelValues(outcome).Inc()
	if outcome == WebhookDelivered {
		m.lag.Observe(lag.Seconds())
	}
}
