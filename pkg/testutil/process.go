package testutil

import (
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
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := built[name]; ok {
		return p
	}
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	dir, err := os.MkdirTemp("", "dataimport-bin-")
	if err != nil {
		tb.Fatal(err)
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, "./cmd/"+name)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("build %s: %v\n%s", name, err, b)
	}
	built[name] = out
	return out
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
