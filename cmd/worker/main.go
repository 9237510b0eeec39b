// Command worker drains the account-import queue. Run as many replicas as
// you like; the cluster-wide concurrency cap is enforced in Redis.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/gridshift/dataimport/pkg/app"
	"github.com/gridshift/dataimport/pkg/config"
	"github.com/gridshift/dataimport/pkg/priority"
)

func main() { app.Main("worker", run) }

func run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	if err := priority.Lower(cfg.BatchNice); err != nil {
		log.Warn("worker priority not lowered", "err", err.Error())
	}
	// Bound before any work starts: without its probe port a replica is
	// invisible to /readyz and /metrics, so it must not run at all.
	probeLn, err := app.Listen("WORKER_HTTP_ADDR", cfg.WorkerHTTPAddr)
	if err != nil {
		return err
	}
	w, err := app.NewWorker(ctx, cfg, log)
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return err
	}
	probes := &http.Server{Addr: cfg.WorkerHTTPAddr, Handler: w.Probes, ReadHeaderTimeout: 5 * time.Second}
	probeErr := make(chan error, 1)
	go func() {
		if err := probes.Serve(probeLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
			probeErr <- fmt.Errorf("probe server %s: %w", cfg.WorkerHTTPAddr, err)
		}
	}()
	log.Info("worker running", "concurrency", cfg.WorkerConcurrency, "probes", cfg.WorkerHTTPAddr)

	var failed error
	select {
	case <-ctx.Done():
	case failed = <-probeErr:
		log.Error("worker stopping: its probe server failed", "err", failed.Error())
	}
	// SIGTERM: stop taking tasks, finish the running ones (up to
	// SHUTDOWN_TIMEOUT); unfinished ones go back to the queue.
	log.Info("worker draining")
	w.Shutdown()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = probes.Shutdown(sctx)
	if failed != nil {
		return failed
	}
	log.Info("worker stopped cleanly")
	return nil
}
