package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	buildMu sync.Mutex
	built   = map[string]string{}
)

// Binary builds ./cmd/<name> once per test process and returns its path.
func Binary(tb testing.TB, name string) string {
	tb.Helper()
	p, err := build("./cmd/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// build compiles a main package of this module or of a tool it requires
// (stripe-mock) once per test process.
func build(pkg string) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := built[pkg]; ok {
		return p, nil
	}
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	dir, err := os.MkdirTemp("", "dataimport-bin-")
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %w\n%s", pkg, err, b)
	}
	built[pkg] = out
	return out, nil
}

// Process is a service binary running as a child process.
type Process struct {
	Cmd  *exec.Cmd
	Logs *SyncBuffer
}

// StartProcess runs ./cmd/<name> with the stack's database and Redis plus
// env ("KEY=value"); it is killed when the test ends.
func (s *Stack) StartProcess(name string, env ...string) *Process {
	s.TB.Helper()
	bin := Binary(s.TB, name)
	logs := &SyncBuffer{}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+s.Config.DatabaseURL, "REDIS_URL="+s.Config.RedisURL,
		"WORKER_HTTP_ADDR=127.0.0.1:0", "HTTP_ADDR=127.0.0.1:0")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		s.TB.Fatal(err)
	}
	p := &Process{Cmd: cmd, Logs: logs}
	s.TB.Cleanup(p.Kill)
	return p
}

// Kill sends SIGKILL and reaps the process.
func (p *Process) Kill() {
	if p.Cmd.ProcessState == nil && p.Cmd.Process != nil {
		_ = p.Cmd.Process.Kill()
		_ = p.Cmd.Wait()
	}
}

// FreeAddr is a loopback address with a port nothing listens on right now,
// for a child process that must be told its address up front.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", port)
}

// FreePort is FreeAddr's port alone.
func FreePort(tb testing.TB) int {
	tb.Helper()
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	return port
}
