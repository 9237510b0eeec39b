package testutil

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Redis is a private redis-server for one test package: its own port and
// directory, so tests can flush, stop and restart it without touching any
// Redis they did not start.
type Redis struct {
	Addr string
	URL  string
	dir  string
	port int
	cmd  *exec.Cmd

	conf  string   // config file given first (sentinel mode needs one)
	extra []string // more arguments (--sentinel, --cluster-enabled yes, ...)
}

// NewRedis starts a private redis-server and stops it when tb ends.
func NewRedis(tb testing.TB) *Redis {
	tb.Helper()
	r, err := StartRedis(tb.TempDir())
	if err != nil {
		tb.Fatalf("private redis: %v", err)
	}
	tb.Cleanup(r.Stop)
	return r
}

// StartRedis starts redis-server with its files under dir.
func StartRedis(dir string) (*Redis, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	r := &Redis{dir: dir, port: port, Addr: "127.0.0.1:" + strconv.Itoa(port)}
	r.URL = "redis://" + r.Addr + "/0"
	return r, r.Start()
}

// Start (re)starts the server on the same port.
func (r *Redis) Start() error {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return fmt.Errorf("redis-server not found (`make test` installs it): %w", err)
	}
	args := []string{"--port", strconv.Itoa(r.port), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", r.dir, "--logfile", filepath.Join(r.dir, "redis.log")}
	if r.conf != "" {
		args = append([]string{r.conf}, args...)
	}
	r.cmd = exec.Command(bin, append(args, r.extra...)...)
	r.cmd.Stdout, r.cmd.Stderr = os.Stderr, os.Stderr
	if err := r.cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	c := goredis.NewClient(&goredis.Options{Addr: r.Addr})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err = c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on %s did not answer: %w", r.Addr, err)
}

// Stop kills the server (its data is gone: it keeps nothing on disk).
func (r *Redis) Stop() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
		r.cmd = nil
	}
}

// freePort is a loopback port nothing listens on right now, chosen below
// the kernel's ephemeral range: a port from that range (what binding to :0
// gives) can be taken by any outgoing connection of a busy test run before
// the child process that was told it binds it, and the child then exits.
// Ports handed out once are not handed out again by this process, nor by
// any other test process while this one lives (claimPort).
func freePort() (int, error) {
	lo, hi := portRange()
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 200 {
		port := lo + rand.IntN(hi-lo)
		if portsGiven[port] {
			continue
		}
		if !claimPort(port) {
			continue // another test process of this machine has it
		}
		portsGiven[port] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue // in use: another
		}
		_ = l.Close()
		return port, nil
	}
	return 0, fmt.Errorf("free port: none free in %d-%d after 200 tries", lo, hi)
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// portRange is the range freePort picks from: 10000 up to the start of the
// ephemeral range (Linux default 32768), or 10000-30000 when unknown.
func portRange() (lo, hi int) {
	lo, hi = 10000, 30000
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	f := strings.Fields(string(b))
	if len(f) == 2 {
		if start, err := strconv.Atoi(f[0]); err == nil && start > lo+2000 {
			hi = start
		}
	}
	return lo, hi
}
