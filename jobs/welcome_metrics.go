package jobs

import "github.com/prometheus/client_golang/prometheus"

// Outcomes of welcome e-mail attempts, the label of WelcomeMetrics.
const (
	welcomeSent          = "sent"          // accepted by the mail server
	welcomeRetry         = "retry"         // definitely not delivered; retried
	welcomeUndeliverable = "undeliverable" // refused for good
	welcomeUnknown       = "unknown"       // maybe delivered: left for an operator, never resent automatically
)

// WelcomeMetrics counts welcome e-mail attempts by outcome, on the worker's
// /metrics. Any increase of outcome="unknown" needs an operator
// (importctl email unknown).
type WelcomeMetrics struct {
	outcomes *prometheus.CounterVec
}

// NewWelcomeMetrics registers the welcome e-mail metrics on reg.
func NewWelcomeMetrics(reg prometheus.Registerer) *WelcomeMetrics {
	m := &WelcomeMetrics{outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dataimport_welcome_emails_total",
		Help: "Welcome e-mail attempts by outcome (sent, retry, undeliverable, unknown: maybe sent, needs an operator).",
	}, []string{"outcome"})}
	for _, o := range []string{welcomeSent, welcomeRetry, welcomeUndeliverable, welcomeUnknown} {
		m.outcomes.WithLabelValues(o) // present at 0, so alerts can compare increases
	}
	reg.MustRegister(m.outcomes)
	return m
}

func (m *WelcomeMetrics) observe(outcome string) {
	if m != nil {
		m.outcomes.WithLabelValues(outcome).Inc()
	}
}
