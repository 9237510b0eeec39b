// Package httpapi is the gin HTTP layer: routing, middleware, the error
// envelope and the handlers of the data-import interface.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	graphql "github.com/graph-gophers/graphql-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gridshift/dataimport/pkg/auth"
	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
	"github.com/gridshift/dataimport/pkg/webhook"
)

// Store is what the handlers need from the database.
type Store interface {
	AccountLookup
	PaymentStore
	NotesStore
	TransactionsStore
	StatementsStore
	ProductStore
	SupplierForOrganisation(ctx context.Context, orgID int64, code string) (dataimport.Supplier, error)
	Process(ctx context.Context, supplierID int64, external string) (dataimport.ImportProcess, error)
	ProcessForOrganisation(ctx context.Context, orgID int64, supplierCode, external string) (postgres.StatusProcess, error)
	AcceptedJobLine(ctx context.Context, orgID int64, supplierCode, external string) (postgres.AcceptedLineLookup, error)
	Stage(ctx context.Context, supplier dataimport.Supplier, external string, payload []byte) (postgres.StageResult, error)
	EachProcess(ctx context.Context, supplierID int64, f postgres.ListFilter, after string, limit int, fn func(postgres.ListRecord) error) error
	TeamByName(ctx context.Context, name string) (dataimport.Team, error)
	ConcurrencyLimit(ctx context.Context) (int, bool, error)
	StartAttempt(ctx context.Context, processID int64, after int, teamID, orgID int64, dryRun bool) (int, bool, error)
	Caps(ctx context.Context, own queue.Owner) (queue.Caps, error)
	AbandonAttempt(ctx context.Context, processID int64, attempt int) error
	Outcome(ctx context.Context, processID int64, attempt int) (postgres.AttemptOutcome, error)
	ScheduleV2(ctx context.Context, in postgres.ScheduleInput) (postgres.Scheduled, error)
	Cancel(ctx context.Context, p dataimport.ImportProcess) (dataimport.ImportProcess, error)
	EventsPage(ctx context.Context, processID, after int64, limit int) ([]postgres.Event, error)
	LatestEvent(ctx context.Context, processID int64) (postgres.Event, bool, error)
	FeedStore
}

// FeedStore is what the event feed needs (postgres/feed.go, feed_watch.go).
type FeedStore interface {
	FeedPage(ctx context.Context, orgID int64, after int64, limit int, types []string, supplierCode string) ([]dataimport.FeedEvent, int64, error)
	FeedTail(ctx context.Context) (int64, error)
	FeedGeneration() uint64
	WaitFeed(ctx context.Context, gen uint64) error
}

// Throttle slows down repeated failed logins per client.
type Throttle interface {
	Blocked(ctx context.Context, key string) (bool, time.Duration, error)
	Failed(ctx context.Context, key string, n int) error
}

// Pinger is a dependency /readyz checks.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Config holds the HTTP-level settings.
type Config struct {
	MaxBodyBytes   int64
	TrustedProxies []string
	ProcessWait    time.Duration // how long create-account waits before 202
	IdempotencyTTL time.Duration // how long an Idempotency-Key's answer is kept; 0: DefaultIdempotencyTTL
	MaxJobBytes    int64         // the largest bulk job upload; 0: DefaultMaxJobBytes
	Uploads        UploadLimits  // bounds on bulk uploads (jobs_limits.go); zero fields take the defaults
}

// Deps are the collaborators of the API.
type Deps struct {
	Store    Store
	Auth     *auth.Service
	Schema   *graphql.Schema
	Creator  Creator
	Throttle Throttle
	Ready    map[string]Pinger // name → dependency, for /readyz
	Logger   *slog.Logger
	Registry *prometheus.Registry // nil: a private one
	Vendors  PaymentVendors       // payment vendors by name; nil: none configured

	Documents DocumentChecker // nil: document paths are not looked up

	Idempotency IdempotencyStore // nil: Idempotency-Key is ignored

	Jobs JobStore // the bulk job endpoints' store (jobs.go)

	Failures FailureStore // failure records (failures.go); nil: not recorded, endpoints 404

	Reconciliation ReconciliationStore // reconciliation and landed_digest (reconciliation.go); nil: endpoints 404, no digests

	Webhooks      WebhookStore  // partner webhook endpoints (webhooks.go)
	WebhookGuard  webhook.Guard // checks a target URL at registration
	WebhookSender WebhookSender // sends a test event; nil: tests answer 500
	UploadSlots   UploadSlots   // an organisation's uploads across replicas; nil: not bounded per organisation
}

// maxGraphQLBodyBytes bounds a GraphQL request. The query itself is
// capped at 8 KiB by the schema; the variables are free-form JSON that
// encoding/json turns into maps, which would make a MAX_BODY_BYTES body of
// empty objects cost hundreds of megabytes. obtainToken needs well under
// 1 KiB.
const maxGraphQLBodyBytes = 64 << 10

// Server is the API's HTTP handler.
type Server struct {
	cfg     Config
	uploads chan struct{} // this replica's uploads in flight (MAX_UPLOADS_PER_REPLICA)
	deps    Deps
	engine  *gin.Engine
	metrics *httpMetrics
}

func init() { gin.SetMode(gin.ReleaseMode) }

// New builds the router.
func New(cfg Config, deps Deps) *Server {
	if deps.Logger == nil {
		deps.Logger = slog.Default()
	}
	if deps.Registry == nil {
		deps.Registry = prometheus.NewRegistry()
		deps.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	cfg.Uploads = cfg.Uploads.withDefaults()
	s := &Server{cfg: cfg, deps: deps, metrics: newHTTPMetrics(deps.Registry), uploads: make(chan struct{}, cfg.Uploads.PerReplica)}
	e := gin.New()
	e.HandleMethodNotAllowed = true
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	escapedPaths(e)
	e.ContextWithFallback = true
	_ = e.SetTrustedProxies(cfg.TrustedProxies)
	e.Use(requestID(), accessLog(deps.Logger), recoverPanics(deps.Logger), s.metrics.middleware(), unescapePathValues())
	e.NoRoute(func(c *gin.Context) {
		renderError(c, dataimport.Errorf(dataimport.CodeNotFound, "Not found."))
	})
	e.NoMethod(func(c *gin.Context) {
		renderError(c, dataimport.Errorf(dataimport.CodeMethodNotAllowed, "Method %q not allowed.", c.Request.Method))
	})

	e.GET("/healthz", healthz)
	e.GET("/readyz", readyz(deps.Ready))
	e.GET("/metrics", gin.WrapH(promhttp.HandlerFor(deps.Registry, promhttp.HandlerOpts{})))
	s.publicRoutes(e)

	body := bodyRules(cfg.MaxBodyBytes)
	e.POST("/v1/graphql/", bodyRules(min(cfg.MaxBodyBytes, maxGraphQLBodyBytes)), s.graphql)

	// Every path segment and query value is checked before any handler.
	v1 := e.Group("/v1/data-import", body, s.authenticate(), checkURLValues())
	v2 := e.Group("/v2/data-import", body, s.authenticate(), checkURLValues())
	if deps.Idempotency != nil {
		// Every POST of both groups, present and future, honours Idempotency-Key.
		v1.Use(s.idempotency())
		v2.Use(s.idempotency())
	}
	s.routes(v1)
	s.routesV2(v2)
	// NDJSON in, read whole: its own body rules, then v1's (validate_accounts.go).
	va := []gin.HandlerFunc{ndjsonBodyRules(cfg.MaxBodyBytes), s.authenticate(), checkURLValues()}
	if deps.Idempotency != nil {
		va = append(va, s.idempotency())
	}
	e.POST(validateAccountsPath, append(va, s.validateAccounts)...)
	// Streamed uploads: no bodyRules, no body-hashing idempotency (jobs.go).
	s.jobRoutes(e.Group("/v1/data-import/jobs", s.authenticate(), checkURLValues()))
	s.engine = e
	return s
}

// ServeHTTP adds the trailing slash partners often forget before routing,
// rather than redirecting a POST.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if (strings.HasPrefix(r.URL.Path, "/v1/") || strings.HasPrefix(r.URL.Path, "/v2/")) && !strings.HasSuffix(r.URL.Path, "/") && r.URL.Path != OpenAPIPath {
		r.URL.Path += "/"
		if r.URL.RawPath != "" {
			r.URL.RawPath += "/"
		}
	}
	s.engine.ServeHTTP(w, r)
}
