package testutil

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/app"
	"github.com/gridshift/dataimport/pkg/auth"
	"github.com/gridshift/dataimport/pkg/config"
	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/logging"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// Stack is the real API over HTTP on a private database and Redis.
type Stack struct {
	TB     testing.TB
	Config config.Config
	DB     *postgres.DB
	Redis  *Redis
	API    *app.API
	Server *httptest.Server
	Logs   *SyncBuffer

	// RequestTimeout bounds each request; zero is 60 s. A benchmark that
	// uploads a large job raises it.
	RequestTimeout time.Duration
}

// StackOption adjusts the configuration before the API is built.
type StackOption func(*config.Config)

// NewStack builds the whole API the way cmd/api does.
func NewStack(tb testing.TB, opts ...StackOption) *Stack {
	tb.Helper()
	return NewStackOn(tb, AdminURL(), opts...)
}

// NewStackOn is NewStack with its database on the Postgres server at admin
// (e.g. a PGServer a test restarts).
func NewStackOn(tb testing.TB, admin string, opts ...StackOption) *Stack {
	tb.Helper()
	d := NewDatabaseOn(tb, admin)
	r := NewRedis(tb)
	cfg, err := config.Load()
	if err != nil {
		tb.Fatal(err)
	}
	cfg.DatabaseURL, cfg.RedisURL = d.URL, r.URL
	for _, o := range opts {
		o(&cfg)
	}
	logs := &SyncBuffer{}
	a, err := app.NewAPI(context.Background(), cfg, logging.New(logs, "debug"))
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler)
	tb.Cleanup(func() {
		srv.Close()
		_ = a.Close()
	})
	// Tests change tenants and suppliers through the API's own store, so its
	// control-plane cache sees them at once, as an in-process write would;
	// cmd/importctl's test covers changes from another process (NOTIFY).
	return &Stack{TB: tb, Config: cfg, DB: a.DB, Redis: r, API: a, Server: srv, Logs: logs}
}

// Tenant is an organisation with a key for some suppliers.
type Tenant struct {
	Org    string
	APIKey string
	Prefix string
	Token  string
}

// Supplier creates an Ongoing supplier.
func (s *Stack) Supplier(code string) dataimport.Supplier {
	s.TB.Helper()
	sup, err := s.DB.CreateSupplier(context.Background(), dataimport.Supplier{Code: code, Status: dataimport.SupplierOngoing, PhoneRegion: "GB"})
	if err != nil {
		s.TB.Fatal(err)
	}
	return sup
}

// Tenant creates an organisation, grants it suppliers, issues a key and
// obtains an access token through GraphQL.
func (s *Stack) Tenant(org string, suppliers ...string) Tenant {
	s.TB.Helper()
	return s.ScopedTenant(org, nil, suppliers...)
}

// ScopedTenant is Tenant with a key that carries scopes (dataimport.Scopes).
func (s *Stack) ScopedTenant(org string, scopes []string, suppliers ...string) Tenant {
	s.TB.Helper()
	ctx := context.Background()
	if _, err := s.DB.CreateOrganisation(ctx, org); err != nil {
		s.TB.Fatal(err)
	}
	k, err := auth.GenerateAPIKey()
	if err != nil {
		s.TB.Fatal(err)
	}
	if err := s.DB.CreateAPIKey(ctx, postgres.NewAPIKey{Organisation: org, Suppliers: suppliers, Prefix: k.Prefix, Hash: k.Hash, Scopes: scopes}); err != nil {
		s.TB.Fatal(err)
	}
	t := Tenant{Org: org, APIKey: k.Plain, Prefix: k.Prefix}
	resp := s.GraphQL(`mutation($k: String!) { obtainToken(input: {APIKey: $k}) { token refreshToken refreshExpiresIn } }`, map[string]any{"k": k.Plain})
	var out struct {
		Data struct {
			ObtainToken struct{ Token string } `json:"obtainToken"`
		} `json:"data"`
	}
	resp.Decode(&out)
	if out.Data.ObtainToken.Token == "" {
		s.TB.Fatalf("obtainToken gave no token: %s", resp.Body)
	}
	t.Token = out.Data.ObtainToken.Token
	return t
}

// Response is a read HTTP response.
type Response struct {
	tb     testing.TB
	Status int
	Header http.Header
	Body   []byte
}

// Decode unmarshals the body into v.
func (r Response) Decode(v any) {
	r.tb.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		r.tb.Fatalf("decode %q: %v", r.Body, err)
	}
}

// JSON returns the body as a generic map.
func (r Response) JSON() map[string]any {
	r.tb.Helper()
	var m map[string]any
	r.Decode(&m)
	return m
}

// Request sends a request; body may be nil, a string/[]byte (sent as is) or
// a value (marshalled). headers are name, value pairs. The request and the
// response are checked against the OpenAPI document (contract.go).
func (s *Stack) Request(method, path string, body any, headers ...string) Response {
	s.TB.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	case io.Reader:
		rd = b
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			s.TB.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, s.Server.URL+path, rd)
	if err != nil {
		s.TB.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	sent := recordBody(req)
	timeout := s.RequestTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		s.TB.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		s.TB.Fatal(err)
	}
	checkContract(s.TB, req, sent, resp.StatusCode, resp.Header, raw)
	return Response{tb: s.TB, Status: resp.StatusCode, Header: resp.Header, Body: raw}
}

// As sends an authenticated request with "Authorization: Token <token>".
func (s *Stack) As(token, method, path string, body any, headers ...string) Response {
	s.TB.Helper()
	return s.Request(method, path, body, append([]string{"Authorization", "Token " + token}, headers...)...)
}

// GraphQL posts a GraphQL request.
func (s *Stack) GraphQL(query string, vars map[string]any, headers ...string) Response {
	s.TB.Helper()
	return s.Request(http.MethodPost, "/v1/graphql/", map[string]any{"query": query, "variables": vars}, headers...)
}

// SyncBuffer is a goroutine-safe log sink tests can scan.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// ReadRepoFile reads a file by its path from the repository root, so tests in
// any package can share fixtures.
func ReadRepoFile(rel string) ([]byte, error) {
	_, here, _, _ := runtime.Caller(0)
	return os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", rel))
}

// StartWorker runs an in-process worker (the same wiring as cmd/worker) on
// the stack's database and Redis, stopped when the test ends or by calling
// Shutdown.
func (s *Stack) StartWorker(opts ...StackOption) *app.Worker {
	s.TB.Helper()
	cfg := s.Config
	for _, o := range opts {
		o(&cfg)
	}
	w, err := app.NewWorker(context.Background(), cfg, logging.New(s.Logs, "info"))
	if err != nil {
		s.TB.Fatal(err)
	}
	if err := w.Start(); err != nil {
		s.TB.Fatal(err)
	}
	var once sync.Once
	s.TB.Cleanup(func() { once.Do(w.Shutdown) })
	return w
}

// FastPipeline shortens the pipeline's timers for tests.
func FastPipeline(c *config.Config) {
	c.ProcessWait = 10 * time.Second
	c.ReconcileEvery = 200 * time.Millisecond
	c.ReconcileGrace = time.Second
	c.SlotLease = 10 * time.Second
	c.WorkerConcurrency = 8
	c.ShutdownTimeout = 5 * time.Second
}

// StackConfig is the configuration a StackOption edits.
type StackConfig = config.Config
