package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	goredis "github.com/redis/go-redis/v9"

	"github.com/gridshift/dataimport/pkg/config"
	"github.com/gridshift/dataimport/pkg/logging"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/redis"
)

// conns are the connections every process opens.
type conns struct {
	db       *postgres.DB
	rdb      goredis.UniversalClient
	redisOpt asynq.RedisConnOpt
}

func connect(ctx context.Context, cfg config.Config, opts ...postgres.Option) (conns, error) {
	db, err := postgres.Open(ctx, cfg.DatabaseURL, opts...)
	if err != nil {
		return conns{}, err
	}
	db.SetMaxConns(cfg.DatabaseMaxConns)
	rdb, opt, err := redis.Connect(ctx, cfg) // REDIS_URL, Sentinel or Cluster
	if err != nil {
		_ = db.Close()
		return conns{}, err
	}
	return conns{db: db, rdb: rdb, redisOpt: opt}, nil
}

func (c conns) close() {
	_ = c.db.Close()
	_ = c.rdb.Close()
}

func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// registerPools exports each Postgres pool's figures (open, in use, waits
// for a connection and their time): a saturated pool, not a slow query, is
// what makes every request of a process wait at once.
func registerPools(reg prometheus.Registerer, db *postgres.DB) {
	for name, pool := range db.Pools() {
		reg.MustRegister(collectors.NewDBStatsCollector(pool, name))
	}
}

// Main is the whole main() of a service binary: configuration, JSON logs
// tagged with the process name, the profiler if asked for, and run until
// SIGINT/SIGTERM cancels its context.
func Main(process string, run func(ctx context.Context, cfg config.Config, log *slog.Logger) error) {
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	log := logging.New(os.Stdout, cfg.LogLevel).With("process", process)
	slog.SetDefault(log)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	if err = ServePprof(cfg.PprofAddr, log); err == nil {
		err = run(ctx, cfg, log)
	}
	stop()
	if err != nil {
		log.Error(process+" stopped", "err", err.Error())
		os.Exit(1)
	}
}
