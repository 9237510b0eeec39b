// Command api serves the data-import HTTP interface.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gridshift/dataimport/pkg/app"
	"github.com/gridshift/dataimport/pkg/config"
)

func main() { app.Main("api", run) }

func run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	// Every listener is bound before any work starts: a replica that cannot
	// bind one exits non-zero instead of running on without it.
	ln, err := app.Listen("HTTP_ADDR", cfg.HTTPAddr)
	if err != nil {
		return err
	}
	var consoleLn net.Listener
	if cfg.ConsoleAddr != "" {
		if consoleLn, err = app.Listen("CONSOLE_ADDR", cfg.ConsoleAddr); err != nil {
			_ = ln.Close()
			return err
		}
	}
	api, err := app.NewAPI(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer api.Close()

	srv := &http.Server{Addr: cfg.HTTPAddr, Handler: api.Handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	srv.RegisterOnShutdown(api.Drain) // feed long-polls answer at once instead of holding the drain
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("api listening", "addr", cfg.HTTPAddr)
	var consoleSrv *http.Server
	if api.Console != nil {
		// The operator console has its own listener, never the partner port.
		consoleSrv = &http.Server{Addr: cfg.ConsoleAddr, Handler: api.Console, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
		go func() {
			if err := consoleSrv.Serve(consoleLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("console %s: %w", cfg.ConsoleAddr, err)
			}
		}()
		log.Info("console listening", "addr", cfg.ConsoleAddr)
	}

	select {
	case err := <-errc:
		return fmt.Errorf("listen %s: %w", cfg.HTTPAddr, err)
	case <-ctx.Done():
	}
	// SIGTERM: stop accepting, let in-flight requests (and waiting creates) finish.
	log.Info("api draining")
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if consoleSrv != nil {
		_ = consoleSrv.Shutdown(sctx)
	}
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("api stopped cleanly")
	return nil
}
