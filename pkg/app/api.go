// Package app assembles the API from configuration, so that cmd/api and the
// integration tests run exactly the same wiring.
package app

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	goredis "github.com/redis/go-redis/v9"

	"github.com/gridshift/dataimport/pkg/auth"
	"github.com/gridshift/dataimport/pkg/config"
	"github.com/gridshift/dataimport/pkg/httpapi"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/redis"
)

// API is the assembled HTTP service and the connections it owns.
type API struct {
	Handler  http.Handler
	DB       *postgres.DB
	Redis    *goredis.Client
	Registry *prometheus.Registry
}

// NewAPI connects to Postgres and Redis and builds the router.
func NewAPI(ctx context.Context, cfg config.Config, log *slog.Logger) (*API, error) {
	db, err := postgres.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	rdb, err := redis.Open(ctx, cfg.RedisURL)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	a := &API{DB: db, Redis: rdb, Registry: prometheus.NewRegistry()}
	a.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	secret, err := auth.LoadSecret(ctx, db, cfg.TokenSecret)
	if err != nil {
		a.Close()
		return nil, err
	}
	authSvc := auth.NewService(db, auth.NewIssuer(secret, cfg.TokenTTL, cfg.RefreshTokenTTL, nil))
	schema, err := auth.Schema(authSvc)
	if err != nil {
		a.Close()
		return nil, err
	}
	a.Handler = httpapi.New(httpapi.Config{MaxBodyBytes: cfg.MaxBodyBytes, TrustedProxies: cfg.TrustedProxies}, httpapi.Deps{
		Store:    db,
		Auth:     authSvc,
		Schema:   schema,
		Throttle: redis.NewFailureThrottle(rdb, "throttle:login:", 10),
		Ready:    map[string]httpapi.Pinger{"postgres": db, "redis": redis.Pinger{Client: rdb}},
		Logger:   log,
		Registry: a.Registry,
	})
	return a, nil
}

// Close releases the connections.
func (a *API) Close() error {
	return errors.Join(a.DB.Close(), a.Redis.Close())
}
