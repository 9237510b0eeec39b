package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/gridshift/dataimport/pkg/priority"
)

// Option tunes Open.
type Option func(*openOptions)

type openOptions struct {
	sessionNice int
	log         *slog.Logger
	once        sync.Once
}

// WithSessionNice runs every session of the pool, inside Postgres, at
// niceness n, when Postgres shares this host and may be reniced from here.
//
// The worker niced its own process (BATCH_NICE), but most of its work is
// done by its Postgres backends, and those stayed at the niceness of the
// partners' status reads: while a migration's batch transactions kept both
// cores busy, a status read waited its turn behind them (make bench-scale,
// 100,000 accounts, the kernel's session groups off: status p99 8.2 ms with
// the worker's sessions at nice 0, 5.8 ms niced). With session groups on
// (autogroup), niceness only counts inside a session, and Postgres starts
// each backend in a session of its own, so there this renice does nothing.
// Lowering the backends' session groups as well was tried: status reads
// during bulk creation gained (p99 17 -> 11 ms), but the per-account path
// collapsed (make bench: p99 9.5 -> 128 ms, accounts/s -34%), most likely
// because a starved worker session holds locks other sessions wait for; it
// was taken back.
// A backend is found by its process title, which names this connection's
// client address and port, so no other process is ever touched; where that
// is not possible (Postgres elsewhere, in another PID namespace, or run by
// another user without CAP_SYS_NICE) the sessions keep their priority and
// the first such connection logs why.
func WithSessionNice(n int, log *slog.Logger) Option {
	return func(o *openOptions) { o.sessionNice, o.log = n, log }
}

// errSessionNotLocal: the backend is not a process of this host seen from here.
var errSessionNotLocal = errors.New("the session's backend is not a process this host can see")

// afterConnect lowers the new session's backend (see WithSessionNice).
func (o *openOptions) afterConnect(ctx context.Context, c *pgx.Conn) error {
	err := lowerSession(c, o.sessionNice)
	o.once.Do(func() {
		if o.log == nil {
			return
		}
		if err != nil {
			o.log.WarnContext(ctx, "database sessions keep their priority", "nice", o.sessionNice, "reason", err.Error())
			return
		}
		o.log.InfoContext(ctx, "database sessions run niced", "nice", o.sessionNice)
	})
	return nil // a session at its old priority still works
}

// lowerSession renices the backend serving c to n.
func lowerSession(c *pgx.Conn, n int) error {
	tcp, ok := c.PgConn().Conn().LocalAddr().(*net.TCPAddr)
	if !ok || !tcp.IP.IsLoopback() {
		return errSessionNotLocal
	}
	pid := int(c.PgConn().PID()) // from the startup handshake: no round trip
	title, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.HasPrefix(title, []byte("postgres: ")) ||
		!bytes.Contains(title, fmt.Appendf(nil, " %s(%d) ", tcp.IP, tcp.Port)) {
		return errSessionNotLocal
	}
	if _, err := priority.LowerProcess(pid, n); err != nil {
		return fmt.Errorf("session backend %d: %w", pid, err)
	}
	return nil
}
