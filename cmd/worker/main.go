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

	"github.com/gridshift/dataimport/pkg/app"
	"github.com/gridshift/dataimport/pkg/config"
	"github.com/gridshift/dataimport/pkg/logging"
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

	w, err := app.NewWorker(ctx, cfg, log)
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return err
	}
	probes := &http.Server{Addr: cfg.WorkerHTTPAddr, Handler: w.Probes, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := probes.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("probe server", "err", err.Error())
		}
	}()
	log.Info("worker running", "concurrency", cfg.WorkerConcurrency, "probes", cfg.WorkerHTTPAddr)

	<-ctx.Done()
	log.Info("worker draining")
	w.Shutdown()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = probes.Shutdown(sctx)
	log.Info("worker stopped cleanly")
	return nil
}
