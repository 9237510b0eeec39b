// Package config reads the twelve-factor environment of CONTRACT §1.
package config

import (
	"fmt"
	"runtime"
	"time"

	"github.com/caarlos0/env/v11"
	"github.com/dustin/go-humanize"
)

// Config is shared by every binary; each uses the parts it needs.
type Config struct {
	DatabaseURL       string        `env:"DATABASE_URL" envDefault:"postgres://postgres@127.0.0.1:5432/dataimport?sslmode=disable"`
	RedisURL          string        `env:"REDIS_URL" envDefault:"redis://127.0.0.1:6379/0"`
	HTTPAddr          string        `env:"HTTP_ADDR" envDefault:"127.0.0.1:8080"`
	WorkerHTTPAddr    string        `env:"WORKER_HTTP_ADDR" envDefault:"127.0.0.1:8081"`
	WorkerConcurrency int           `env:"WORKER_CONCURRENCY"`
	TokenSecret       string        `env:"TOKEN_SECRET"`
	TokenTTL          time.Duration `env:"TOKEN_TTL" envDefault:"60m"`
	RefreshTokenTTL   time.Duration `env:"REFRESH_TOKEN_TTL" envDefault:"168h"`
	ProcessWait       time.Duration `env:"PROCESS_WAIT" envDefault:"25s"`
	SlotLease         time.Duration `env:"SLOT_LEASE" envDefault:"2m"`
	WorkerPoll        time.Duration `env:"WORKER_POLL_INTERVAL" envDefault:"100ms"`
	ReconcileEvery    time.Duration `env:"RECONCILE_EVERY" envDefault:"5s"`
	ReconcileGrace    time.Duration `env:"RECONCILE_GRACE" envDefault:"15s"`
	MaxBodyBytesRaw   string        `env:"MAX_BODY_BYTES" envDefault:"5MiB"`
	SMTPURL           string        `env:"SMTP_URL"`
	SMTPFrom          string        `env:"SMTP_FROM" envDefault:"Account migrations <no-reply@localhost>"`
	DocumentStoreURL  string        `env:"DOCUMENT_STORE_URL"`
	StripeAPIKey      string        `env:"STRIPE_API_KEY"` // empty: vendor STRIPE not configured
	StripeAPIURL      string        `env:"STRIPE_API_URL"` // empty: Stripe's own API
	LogLevel          string        `env:"LOG_LEVEL" envDefault:"info"`
	PprofAddr         string        `env:"PPROF_ADDR"` // empty: profiler off
	ShutdownTimeout   time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"30s"`
	TrustedProxies    []string      `env:"TRUSTED_PROXIES" envSeparator:","`

	MaxBodyBytes int64 `env:"-"`
}

// Load reads the environment and fills derived values.
func Load() (Config, error) {
	var c Config
	if err := env.Parse(&c); err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	n, err := humanize.ParseBytes(c.MaxBodyBytesRaw)
	if err != nil || n == 0 {
		return c, fmt.Errorf("config: MAX_BODY_BYTES=%q: must be a size such as 5MiB", c.MaxBodyBytesRaw)
	}
	c.MaxBodyBytes = int64(n)
	if c.WorkerConcurrency <= 0 {
		c.WorkerConcurrency = 2 * runtime.NumCPU()
	}
	if c.TokenTTL <= 0 {
		return c, fmt.Errorf("config: TOKEN_TTL must be positive")
	}
	return c, nil
}
