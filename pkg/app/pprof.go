package app

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"time"
)

// ServePprof exposes the Go profiler on its own listener when addr is set
// (PPROF_ADDR), never on the public API port. The port is bound before it
// returns: an error means it could not be.
func ServePprof(addr string, log *slog.Logger) error {
	if addr == "" {
		return nil
	}
	ln, err := Listen("PPROF_ADDR", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		log.Info("pprof listening", "addr", addr)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("pprof server", "err", err.Error())
		}
	}()
	return nil
}
