package testutil

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PGServer is a private Postgres server for tests that stop and restart
// it; nothing else runs on it, so no other test is disturbed.
type PGServer struct {
	URL  string // admin URL (database postgres)
	dir  string
	port int
	bin  string
}

// NewPGServer initialises and starts a private cluster; it is stopped and
// removed when tb ends.
func NewPGServer(tb testing.TB) *PGServer {
	tb.Helper()
	bin, err := pgBinDir()
	if err != nil {
		tb.Fatalf("no Postgres server binaries (`make test` installs them): %v", err)
	}
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "dataimport-pg-")
	if err != nil {
		tb.Fatal(err)
	}
	s := &PGServer{dir: dir, port: port, bin: bin,
		URL: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)}
	if err := s.chownForServer(); err != nil {
		tb.Fatal(err)
	}
	if out, err := s.run("initdb", "-D", filepath.Join(dir, "data"), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"); err != nil {
		tb.Fatalf("initdb: %v\n%s", err, out)
	}
	tb.Cleanup(func() {
		s.Stop()
		_ = os.RemoveAll(dir)
	})
	if err := s.Start(); err != nil {
		tb.Fatal(err)
	}
	return s
}

// Start starts (or restarts) the server and waits until it answers.
func (s *PGServer) Start() error {
	out, err := s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-l", filepath.Join(s.dir, "log"), "-w", "-t", "30",
		"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200", s.port, s.dir), "start")
	if err != nil {
		return fmt.Errorf("pg_ctl start: %w\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		if c, err := pgx.Connect(ctx, s.URL); err == nil {
			_ = c.Close(ctx)
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("postgres on port %d did not answer", s.port)
}

// Stop shuts the server down fast (connections are cut, as in a crash of
// the database host; committed data survives).
func (s *PGServer) Stop() {
	_, _ = s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop")
}

func (s *PGServer) run(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	if os.Geteuid() == 0 {
		// The server refuses to run as root.
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(s.bin, name)}, args...)...)
	}
	return cmd.CombinedOutput()
}

func (s *PGServer) chownForServer() error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("running as root needs a postgres user: %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(s.dir, uid, gid)
}

func pgBinDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(r), nil
		}
	}
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(m) == 0 {
		return "", fmt.Errorf("pg_ctl not found")
	}
	return filepath.Dir(m[len(m)-1]), nil
}
