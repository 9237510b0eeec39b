// Command worker drains the account-import queue. Run as many replicas as
// you like; the cluster-wide concurrency cap is enforced in Redis.
package main

import (
	"context"
	"errors"
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
	// SIGTERM: stop taking tasks, finish the running ones (up to
	// SHUTDOWN_TIMEOUT); unfinished ones go back to the queue.
	log.Info("worker draining")
	w.Shutdown()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = probes.Shutdown(sctx)
	log.Info("worker stopped cleanly")
	return nil
}
