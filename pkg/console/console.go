// Package console is the operator console (issue 20, CONTRACT §12): a small
// server-rendered site on its own listener (CONSOLE_ADDR), never on the
// partner port. Go html/template pages, htmx for the live parts and Chart.js
// for the chart, both vendored and embedded (static/vendor, licences kept),
// so it works offline. Every change an operator makes goes through the same
// store calls as importctl, under the actor operator:<name>, and so lands in
// the audit log in the transaction of the change.
package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/gorilla/csrf"
	"github.com/hibiken/asynq"

	"github.com/gridshift/dataimport/pkg/postgres"
)

//go:embed templates static
var assets embed.FS

// Throttle slows down repeated failed logins per client (the same Redis
// throttle as obtainToken's, under its own prefix).
type Throttle interface {
	Blocked(ctx context.Context, key string) (bool, time.Duration, error)
	Failed(ctx context.Context, key string, n int) error
}

// Inspector is the part of asynq's Inspector the overview reads.
type Inspector interface {
	Servers() ([]*asynq.ServerInfo, error)
	GetQueueInfo(queue string) (*asynq.QueueInfo, error)
}

// Config holds the console's settings.
type Config struct {
	// CookieSecure marks the session and CSRF cookies Secure (default; only
	// CONSOLE_COOKIE_SECURE=false turns it off, for plain-http local use).
	CookieSecure bool
	SessionTTL   time.Duration
	// CSRFKey authenticates the CSRF cookie; every replica must share it.
	CSRFKey []byte
	// OverviewCacheTTL: the overview's aggregates are computed at most once
	// per this interval per process, however many operators watch it.
	OverviewCacheTTL time.Duration
	// TrustedProxies (TRUSTED_PROXIES, addresses or CIDR ranges) are the
	// peers whose X-Forwarded-For names the client; no other peer's is read.
	TrustedProxies []string
}

// Deps are the console's collaborators.
type Deps struct {
	Store     *postgres.DB
	Inspector Inspector
	Throttle  Throttle
	Logger    *slog.Logger
	// Optional sections of the overview; nil shows "not available".
	// StoreWebhooks reads the webhook section from the store.
	Webhooks WebhookHealth
	BulkJobs BulkJobProgress
	// Replicas lists the live processes (their heartbeats); nil shows
	// "not available".
	Replicas ReplicaList
}

// WebhookHealth lists webhook endpoints and their health for the overview.
type WebhookHealth func(ctx context.Context) ([]WebhookEndpoint, error)

// StoreWebhooks is the overview's webhook section read from db: an
// endpoint is "disabled: <reason>", "failing" once a delivery gave up after
// its whole retry schedule, "retrying" while deliveries wait for a retry,
// else "healthy". Failing counts both kinds of undelivered event.
func StoreWebhooks(db *postgres.DB) WebhookHealth {
	return func(ctx context.Context) ([]WebhookEndpoint, error) {
		rows, err := db.WebhookHealth(ctx)
		if err != nil {
			return nil, err
		}
		out := make([]WebhookEndpoint, len(rows))
		for i, r := range rows {
			health := "healthy"
			switch {
			case !r.Enabled:
				health = "disabled"
				if r.DisabledReason != nil {
					health += ": " + *r.DisabledReason
				}
			case r.Failed > 0:
				health = "failing"
			case r.Retrying > 0:
				health = "retrying"
			}
			out[i] = WebhookEndpoint{Organisation: r.Organisation, URL: r.URL, Health: health,
				LastDelivery: r.LastDelivery, Failing: r.Retrying + r.Failed}
		}
		return out, nil
	}
}

// WebhookEndpoint is one row of the overview's webhook section.
type WebhookEndpoint struct {
	Organisation, URL, Health string
	LastDelivery              *time.Time
	Failing                   int64
}

// BulkJobProgress lists bulk jobs in progress for the overview.
// HOOK: no bulk jobs exist on main yet; wire the store's reader here.
type BulkJobProgress func(ctx context.Context) ([]BulkJob, error)

// BulkJob is one row of the overview's bulk-job section.
type BulkJob struct {
	ID, Supplier, Status string
	Done, Total          int64
	// Control is the job's control totals: "match", "mismatch: <totals>",
	// or "" when none was declared.
	Control string
	// Compacted is when a completed job dropped what its created lines were
	// sent as ("" while it keeps them).
	Compacted string
}

// Percent is the job's progress for its bar.
func (j BulkJob) Percent() int64 {
	if j.Total <= 0 {
		return 0
	}
	return j.Done * 100 / j.Total
}

// Console serves the pages.
type Console struct {
	cfg      Config
	deps     Deps
	pages    map[string]*template.Template
	overview overviewCache
	proxies  []netip.Prefix // TRUSTED_PROXIES
}

// csrfField is the form field carrying the CSRF token.
const csrfField = "csrf_token"

// New builds the console's handler.
func New(cfg Config, deps Deps) (http.Handler, error) {
	if len(cfg.CSRFKey) != 32 {
		return nil, errors.New("console: the CSRF key must be 32 bytes")
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.OverviewCacheTTL <= 0 {
		cfg.OverviewCacheTTL = time.Second
	}
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	c := &Console{cfg: cfg, deps: deps}
	var err error
	if c.proxies, err = parseProxies(cfg.TrustedProxies); err != nil {
		return nil, err
	}
	if c.pages, err = parsePages(); err != nil {
		return nil, err
	}
	static, err := fs.Sub(assets, "static")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /static/", http.StripPrefix("/static/", cacheable(http.FileServerFS(static))))
	mux.HandleFunc("GET /login", c.loginPage)
	mux.HandleFunc("POST /login", c.login)
	mux.HandleFunc("POST /logout", c.logout)
	mux.HandleFunc("GET /password", c.passwordPage)
	mux.HandleFunc("POST /password", c.changePassword)
	mux.HandleFunc("GET /{$}", c.overviewPage)
	mux.HandleFunc("GET /overview/live", c.overviewLive)
	mux.HandleFunc("GET /overview/chart.json", c.chartData)
	mux.HandleFunc("POST /limit", c.setLimit)
	mux.HandleFunc("POST /limit/caps", c.setCap)
	mux.HandleFunc("GET /suppliers/{code}", c.supplierPage)
	mux.HandleFunc("POST /suppliers/{code}/status", c.setSupplierStatus)
	mux.HandleFunc("POST /suppliers/{code}/brake", c.setSupplierBrake)
	mux.HandleFunc("GET /suppliers/{code}/accounts", c.accountPage)
	mux.HandleFunc("POST /suppliers/{code}/accounts/skip", c.skipAccount)
	mux.HandleFunc("POST /suppliers/{code}/accounts/unskip", c.unskipAccount) // account_actions.go
	mux.HandleFunc("POST /suppliers/{code}/accounts/retry", c.retryAccount)
	mux.HandleFunc("GET /suppliers/{code}/failures", c.failuresPage)
	mux.HandleFunc("GET /suppliers/{code}/failures/{id}", c.failurePage)
	mux.HandleFunc("POST /suppliers/{code}/failures/retry", c.retryFailures) // failures_retry.go
	mux.HandleFunc("GET /audit", c.auditPage)

	protect := csrf.Protect(cfg.CSRFKey,
		csrf.Secure(cfg.CookieSecure), csrf.HttpOnly(true), csrf.SameSite(csrf.SameSiteStrictMode), csrf.Path("/"),
		csrf.FieldName(csrfField), csrf.CookieName("console_csrf"), csrf.MaxAge(int(cfg.SessionTTL.Seconds())),
		csrf.ErrorHandler(http.HandlerFunc(c.csrfFailed)))
	// Order: security headers, then the session (no session: to /login,
	// whatever the method), then CSRF on every state-changing request
	// (login included), then the page.
	return c.accessLog(c.headers(c.authenticate(c.plaintext(protect(mux))))), nil
}

// statusWriter remembers the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// accessLog logs every console request (JSON, like the API's): method, path
// (never the query, which may carry an account number), status, time taken.
func (c *Console) accessLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.status == 0 {
			sw.status = http.StatusOK
		}
		c.deps.Logger.InfoContext(r.Context(), "console request", "method", r.Method, "path", r.URL.Path,
			"status", sw.status, "duration_ms", float64(time.Since(start).Microseconds())/1000, "client_ip", c.clientIP(r))
	})
}

// plaintext tells gorilla/csrf the console is served over plain HTTP when
// cookies are not Secure, so it checks the Origin header against http://.
func (c *Console) plaintext(next http.Handler) http.Handler {
	if c.cfg.CookieSecure {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, csrf.PlaintextHTTPRequest(r))
	})
}

func (c *Console) headers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, "/static/") {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

func cacheable(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		next.ServeHTTP(w, r)
	})
}

func (c *Console) csrfFailed(w http.ResponseWriter, r *http.Request) {
	c.deps.Logger.WarnContext(r.Context(), "console request refused: CSRF", "path", r.URL.Path, "reason", csrf.FailureReason(r))
	http.Error(w, "Forbidden: the form's security token is missing or stale. Reload the page and try again.", http.StatusForbidden)
}

// clientIP is the client's address: the peer's, or, when the peer is one of
// the trusted proxies (TRUSTED_PROXIES), the last address in
// X-Forwarded-For that is not a trusted proxy itself (gin's rule, as the
// API uses). A header from any other peer is ignored: anyone can send one.
func (c *Console) clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if !c.trusted(host) {
		return host
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		if _, err := netip.ParseAddr(hop); err != nil {
			break // a malformed hop: believe nothing before it
		}
		if !c.trusted(hop) {
			return hop
		}
	}
	return host
}

// trusted reports whether ip is one of the trusted proxies.
func (c *Console) trusted(ip string) bool {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range c.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseProxies reads TRUSTED_PROXIES: addresses or CIDR ranges.
func parseProxies(list []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("console: TRUSTED_PROXIES: %w", err)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("console: TRUSTED_PROXIES: %w", err)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
