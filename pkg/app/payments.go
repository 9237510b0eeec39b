package app

import (
	"log/slog"

	"github.com/gridshift/dataimport/pkg/config"
	"github.com/gridshift/dataimport/pkg/payments"
	"github.com/gridshift/dataimport/pkg/payments/stripevendor"
)

// paymentVendors builds the registry of configured payment vendors, each
// wrapped with the interface's retry and circuit-breaker semantics. A new
// vendor is one adapter package and one Register line here.
func paymentVendors(cfg config.Config, log *slog.Logger) *payments.Registry {
	r := payments.NewRegistry()
	if cfg.StripeAPIKey != "" {
		stripe := stripevendor.New(stripevendor.Config{APIKey: cfg.StripeAPIKey, URL: cfg.StripeAPIURL})
		r.Register(stripevendor.Name, payments.Resilient(stripevendor.Name, stripe, payments.DefaultPolicy(), log))
	}
	return r
}
