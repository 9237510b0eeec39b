// Command worker drains the account-import queue. Run as many replicas as
// you like; the cluster-wide concurrency cap is enforced in Redis.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hibiken/asynq"

	"github.com/gridshift/dataimport/jobs"
	"github.com/gridshift/dataimport/pkg/config"
	"github.com/gridshift/dataimport/pkg/httpapi"
	"github.com/gridshift/dataimport/pkg/logging"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/redis"
)

func main() {
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	log := logging.New(os.Stdout, cfg.LogLevel).With("process", "worker")
	slog.SetDefault(log)
	if err := run(cfg, log); err != nil {
		log.Error("worker stopped", "err", err.Error())
		os.Exit(1)
	}
}

func run(cfg config.Config, log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	db, err := postgres.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	rdb, err := redis.Open(ctx, cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	redisOpt, err := asynq.ParseRedisURI(cfg.RedisURL)
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}

	srv := asynq.NewServer(redisOpt, asynq.Config{
		Concurrency:     cfg.WorkerConcurrency,
		ShutdownTimeout: cfg.ShutdownTimeout,
		Logger:          asynqLogger{log},
		BaseContext:     func() context.Context { return context.Background() },
	})
	if err := srv.Start(jobs.NewMux(jobs.Deps{})); err != nil {
		return fmt.Errorf("start asynq server: %w", err)
	}

	probes := &http.Server{Addr: cfg.WorkerHTTPAddr, ReadHeaderTimeout: 5 * time.Second,
		Handler: httpapi.ProbeHandler(map[string]httpapi.Pinger{"postgres": db, "redis": redis.Pinger{Client: rdb}}, nil)}
	go func() {
		if err := probes.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("probe server", "err", err.Error())
		}
	}()
	log.Info("worker running", "concurrency", cfg.WorkerConcurrency, "probes", cfg.WorkerHTTPAddr)

	<-ctx.Done()
	// SIGTERM: stop taking tasks and wait (up to SHUTDOWN_TIMEOUT) for the
	// running ones; unfinished ones go back to the queue for another replica.
	log.Info("worker draining")
	srv.Shutdown()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = probes.Shutdown(sctx)
	log.Info("worker stopped cleanly")
	return nil
}

// asynqLogger routes asynq's own logs into our JSON logs.
type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...), "component", "asynq") }
func (a asynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...), "component", "asynq") }
func (a asynqLogger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...), "component", "asynq") }
func (a asynqLogger) Error(args ...any) { a.l.Error(fmt.Sprint(args...), "component", "asynq") }
func (a asynqLogger) Fatal(args ...any) {
	a.l.Error(fmt.Sprint(args...), "component", "asynq")
	os.Exit(1)
}
