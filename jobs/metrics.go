package jobs

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics of the account pipeline, served by the worker's /metrics.
type Metrics struct {
	outcomes *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics registers the pipeline metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dataimport_accounts_total", Help: "Account-creation attempts by supplier and outcome (COMPLETED, FAILED, DRY_RUN).",
		}, []string{"supplier", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "dataimport_account_job_duration_seconds", Help: "Duration of account-creation jobs by outcome.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"outcome"}),
	}
	reg.MustRegister(m.outcomes, m.duration)
	return m
}

func (m *Metrics) observe(supplier, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.outcomes.WithLabelValues(supplier, outcome).Inc()
	if d > 0 {
		m.duration.WithLabelValues(outcome).Observe(d.Seconds())
	}
}
