// Package config reads the twelve-factor environment of CONTRACT §1.
package config

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
	"github.com/dustin/go-humanize"
)

// Config is shared by every binary; each uses the parts it needs.
type Config struct {
	DatabaseURL       string        `env:"DATABASE_URL" envDefault:"postgres://postgres@127.0.0.1:5432/dataimport?sslmode=disable"`
	RedisURL          string        `env:"REDIS_URL" envDefault:"redis://127.0.0.1:6379/0"`
	DatabaseReadURL   string        `env:"DATABASE_READ_URL"` // empty: status and list reads go to DATABASE_URL
	HTTPAddr          string        `env:"HTTP_ADDR" envDefault:"127.0.0.1:8080"`
	WorkerHTTPAddr    string        `env:"WORKER_HTTP_ADDR" envDefault:"127.0.0.1:8081"`
	WorkerConcurrency int           `env:"WORKER_CONCURRENCY"`
	DatabaseMaxConns  int           `env:"DATABASE_MAX_CONNS"` // per process and pool; default 4 per CPU
	WorkerDBWriters   int           `env:"WORKER_DB_WRITERS"`  // account-creation transactions per worker at once; default 1 per CPU
	TokenSecret       string        `env:"TOKEN_SECRET"`
	TokenTTL          time.Duration `env:"TOKEN_TTL" envDefault:"60m"`
	RefreshTokenTTL   time.Duration `env:"REFRESH_TOKEN_TTL" envDefault:"168h"`
	ProcessWait       time.Duration `env:"PROCESS_WAIT" envDefault:"25s"`
	IdempotencyTTL    time.Duration `env:"IDEMPOTENCY_TTL" envDefault:"24h"` // how long an Idempotency-Key's answer is replayed
	SlotLease         time.Duration `env:"SLOT_LEASE" envDefault:"2m"`
	WorkerPoll        time.Duration `env:"WORKER_POLL_INTERVAL" envDefault:"20ms"`
	ReconcileEvery    time.Duration `env:"RECONCILE_EVERY" envDefault:"5s"`
	ReconcileGrace    time.Duration `env:"RECONCILE_GRACE" envDefault:"15s"`
	MaxBodyBytesRaw   string        `env:"MAX_BODY_BYTES" envDefault:"5MiB"`
	// Bulk import jobs (CONTRACT §11): the largest upload (compressed or
	// not, and its decompressed size), and how long a worker holds a job
	// before another may take it over.
	MaxJobBytesRaw string        `env:"MAX_JOB_BYTES" envDefault:"2GiB"`
	JobLease       time.Duration `env:"JOB_LEASE" envDefault:"30s"`
	// Compaction of completed jobs (jobs.JobCompactor): how often workers
	// look for them, and how long after completing a job is left whole.
	JobCompactEvery time.Duration `env:"JOB_COMPACT_EVERY" envDefault:"1m"`
	JobCompactAfter time.Duration `env:"JOB_COMPACT_AFTER" envDefault:"10m"`
	// Upload hardening (a stalled or hostile upload must not hold shared
	// resources nor fill Postgres): how long an upload may send nothing
	// (408), how many uploads at once per organisation across replicas and
	// per replica (429 beyond), when the reaper fails an upload whose
	// heartbeat stopped, the most lines per job (413), the invalid-line
	// ratio past which a job stops after JOB_INVALID_CHECK_AFTER lines
	// (400), and the largest gzip inflation past the first MiB (413).
	UploadIdleTimeout    time.Duration `env:"UPLOAD_IDLE_TIMEOUT" envDefault:"30s"`
	MaxUploadsPerOrg     int           `env:"MAX_UPLOADS_PER_ORG" envDefault:"4"`
	MaxUploadsPerReplica int           `env:"MAX_UPLOADS_PER_REPLICA" envDefault:"16"`
	UploadLostAfter      time.Duration `env:"UPLOAD_LOST_AFTER" envDefault:"1h"`
	MaxJobLines          int64         `env:"MAX_JOB_LINES" envDefault:"5000000"`
	JobInvalidCheckAfter int64         `env:"JOB_INVALID_CHECK_AFTER" envDefault:"1000"`
	MaxJobInvalidRatio   float64       `env:"MAX_JOB_INVALID_RATIO" envDefault:"0.5"`
	MaxGzipRatio         float64       `env:"MAX_GZIP_RATIO" envDefault:"500"`
	SMTPURL              string        `env:"SMTP_URL"`
	SMTPFrom             string        `env:"SMTP_FROM" envDefault:"Account migrations <no-reply@localhost>"`
	DocumentStoreURL     string        `env:"DOCUMENT_STORE_URL"`
	StripeAPIKey         string        `env:"STRIPE_API_KEY"` // empty: vendor STRIPE not configured
	StripeAPIURL         string        `env:"STRIPE_API_URL"` // empty: Stripe's own API
	LogLevel             string        `env:"LOG_LEVEL" envDefault:"info"`
	PprofAddr            string        `env:"PPROF_ADDR"` // empty: profiler off
	// Operator console (issue 20): its own listener, off when empty.
	ConsoleAddr         string        `env:"CONSOLE_ADDR"`
	ConsoleCookieSecure bool          `env:"CONSOLE_COOKIE_SECURE" envDefault:"true"` // false only for plain-http local use
	ConsoleSessionTTL   time.Duration `env:"CONSOLE_SESSION_TTL" envDefault:"12h"`
	// How long one computation of the overview serves every operator's view.
	ConsoleOverviewCacheTTL time.Duration `env:"CONSOLE_OVERVIEW_CACHE" envDefault:"1s"`
	ShutdownTimeout         time.Duration `env:"SHUTDOWN_TIMEOUT" envDefault:"30s"`
	TrustedProxies          []string      `env:"TRUSTED_PROXIES" envSeparator:","`

	// Webhooks (CONTRACT §9). WEBHOOK_ALLOW_PRIVATE permits loopback and
	// private targets and plain http: local development and tests only.
	WebhookAllowPrivate        bool          `env:"WEBHOOK_ALLOW_PRIVATE" envDefault:"false"`
	WebhookConcurrency         int           `env:"WEBHOOK_CONCURRENCY" envDefault:"32"`         // delivery attempts per worker at once
	WebhookEndpointConcurrency int           `env:"WEBHOOK_ENDPOINT_CONCURRENCY" envDefault:"8"` // attempts in flight per endpoint, cluster-wide
	WebhookRetryBase           time.Duration `env:"WEBHOOK_RETRY_BASE" envDefault:"10s"`         // first retry delay; the ~24 h schedule scales with it
	WebhookTimeout             time.Duration `env:"WEBHOOK_TIMEOUT" envDefault:"10s"`            // one attempt, dial to the end of the body read

	// Redis topology: REDIS_URL (one server, the default), or Sentinel, or
	// Cluster; Load accepts exactly one. REDIS_PASSWORD is the data nodes'
	// password for Sentinel and Cluster (with REDIS_URL it goes in the URL).
	RedisSentinelAddrs    []string `env:"REDIS_SENTINEL_ADDRS" envSeparator:","`
	RedisSentinelMaster   string   `env:"REDIS_SENTINEL_MASTER"`
	RedisSentinelPassword string   `env:"REDIS_SENTINEL_PASSWORD"`
	RedisClusterAddrs     []string `env:"REDIS_CLUSTER_ADDRS" envSeparator:","`
	RedisPassword         string   `env:"REDIS_PASSWORD"`

	// BatchNice is the niceness the worker process gives itself: batch work
	// yields the CPU to partners' interactive requests on a shared host (0:
	// keep the priority). The API serves those requests and is never niced.
	BatchNice int `env:"BATCH_NICE" envDefault:"10"`

	MaxBodyBytes int64 `env:"-"`
	MaxJobBytes  int64 `env:"-"`
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
	if n, err = humanize.ParseBytes(c.MaxJobBytesRaw); err != nil || n == 0 {
		return c, fmt.Errorf("config: MAX_JOB_BYTES=%q: must be a size such as 2GiB", c.MaxJobBytesRaw)
	}
	c.MaxJobBytes = int64(n)
	if c.JobLease < time.Second {
		return c, fmt.Errorf("config: JOB_LEASE must be at least 1s, such as 30s")
	}
	if err := c.checkUploads(); err != nil {
		return c, err
	}
	if c.WorkerConcurrency <= 0 {
		c.WorkerConcurrency = 2 * runtime.NumCPU()
	}
	if c.WorkerDBWriters <= 0 {
		c.WorkerDBWriters = runtime.NumCPU()
	}
	if c.DatabaseMaxConns <= 0 {
		// Postgres does the most work with a few busy backends per core;
		// more only queue inside it (jobs beyond this wait for a connection).
		c.DatabaseMaxConns = 4 * runtime.NumCPU()
	}
	if c.WebhookConcurrency <= 0 || c.WebhookEndpointConcurrency <= 0 {
		return c, fmt.Errorf("config: WEBHOOK_CONCURRENCY and WEBHOOK_ENDPOINT_CONCURRENCY must be positive")
	}
	if c.WebhookRetryBase <= 0 || c.WebhookTimeout <= 0 {
		return c, fmt.Errorf("config: WEBHOOK_RETRY_BASE and WEBHOOK_TIMEOUT must be positive, such as 10s")
	}
	if c.TokenTTL <= 0 {
		return c, fmt.Errorf("config: TOKEN_TTL must be positive")
	}
	if c.IdempotencyTTL <= 0 {
		return c, fmt.Errorf("config: IDEMPOTENCY_TTL must be positive, such as 24h")
	}
	if c.ConsoleAddr != "" && c.ConsoleAddr == c.HTTPAddr {
		return c, fmt.Errorf("config: CONSOLE_ADDR must differ from HTTP_ADDR: the console never shares the partner-facing port")
	}
	if c.ConsoleSessionTTL <= 0 {
		return c, fmt.Errorf("config: CONSOLE_SESSION_TTL must be positive, such as 12h")
	}
	c.RedisSentinelAddrs, c.RedisClusterAddrs = cleanList(c.RedisSentinelAddrs), cleanList(c.RedisClusterAddrs)
	if err := c.checkRedisTopology(os.Getenv("REDIS_URL") != ""); err != nil {
		return c, err
	}
	return c, nil
}

// checkUploads refuses upload settings that would turn a bound off by
// mistake (zero or negative) or make no sense.
func (c Config) checkUploads() error {
	switch {
	case c.UploadIdleTimeout < time.Second:
		return fmt.Errorf("config: UPLOAD_IDLE_TIMEOUT must be at least 1s, such as 30s")
	case c.MaxUploadsPerOrg < 1 || c.MaxUploadsPerReplica < 1:
		return fmt.Errorf("config: MAX_UPLOADS_PER_ORG and MAX_UPLOADS_PER_REPLICA must be at least 1")
	case c.UploadLostAfter < time.Minute:
		// A retry takes a stalled upload over after 10 s; the reaper must
		// leave it that chance.
		return fmt.Errorf("config: UPLOAD_LOST_AFTER must be at least 1m, such as 1h")
	case c.MaxJobLines < 1:
		return fmt.Errorf("config: MAX_JOB_LINES must be at least 1")
	case c.JobInvalidCheckAfter < 1:
		return fmt.Errorf("config: JOB_INVALID_CHECK_AFTER must be at least 1, such as 1000")
	case !(c.MaxJobInvalidRatio > 0 && c.MaxJobInvalidRatio <= 1):
		return fmt.Errorf("config: MAX_JOB_INVALID_RATIO must be above 0 and at most 1, such as 0.5")
	case !(c.MaxGzipRatio >= 2):
		return fmt.Errorf("config: MAX_GZIP_RATIO must be at least 2, such as 500")
	}
	return nil
}

// Redis topologies, as RedisTopology names them.
const (
	RedisSingle   = "single"
	RedisSentinel = "sentinel"
	RedisCluster  = "cluster"
)

// RedisTopology says which Redis the configuration names: Sentinel when
// REDIS_SENTINEL_ADDRS is set, Cluster when REDIS_CLUSTER_ADDRS is, else the
// one server at REDIS_URL.
func (c Config) RedisTopology() string {
	switch {
	case len(c.RedisSentinelAddrs) > 0:
		return RedisSentinel
	case len(c.RedisClusterAddrs) > 0:
		return RedisCluster
	}
	return RedisSingle
}

// checkRedisTopology requires exactly one topology. REDIS_URL has a default,
// so it counts as chosen only when urlSet (the variable is set and not empty).
func (c Config) checkRedisTopology(urlSet bool) error {
	var set []string
	if urlSet {
		set = append(set, "REDIS_URL")
	}
	if len(c.RedisSentinelAddrs) > 0 {
		set = append(set, "REDIS_SENTINEL_ADDRS")
	}
	if len(c.RedisClusterAddrs) > 0 {
		set = append(set, "REDIS_CLUSTER_ADDRS")
	}
	if len(set) > 1 {
		return fmt.Errorf("config: %s are set; set exactly one Redis topology: REDIS_URL (one server), "+
			"REDIS_SENTINEL_ADDRS with REDIS_SENTINEL_MASTER (Sentinel) or REDIS_CLUSTER_ADDRS (Cluster)", strings.Join(set, " and "))
	}
	sentinel := len(c.RedisSentinelAddrs) > 0
	if sentinel != (c.RedisSentinelMaster != "") {
		return fmt.Errorf("config: REDIS_SENTINEL_ADDRS and REDIS_SENTINEL_MASTER go together: set both for Sentinel, or neither")
	}
	if !sentinel && c.RedisSentinelPassword != "" {
		return fmt.Errorf("config: REDIS_SENTINEL_PASSWORD is set without REDIS_SENTINEL_ADDRS")
	}
	if c.RedisTopology() == RedisSingle && c.RedisPassword != "" {
		return fmt.Errorf("config: REDIS_PASSWORD is for Sentinel and Cluster; with REDIS_URL put the password in the URL (redis://:password@host:6379/0)")
	}
	for _, a := range append(append([]string{}, c.RedisSentinelAddrs...), c.RedisClusterAddrs...) {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return fmt.Errorf("config: Redis address %q: want host:port", a)
		}
	}
	return nil
}

// cleanList drops blanks around and between comma-separated entries.
func cleanList(in []string) []string {
	var out []string
	for _, s := range in {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
