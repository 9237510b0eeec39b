package priority

import (
	"errors"
	"fmt"
	"golang.org/x/sys/unix"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// ErrSharedGroup: the process could not get a scheduling group of its own
// (it leads a process group inside someone else's session, a shell's job),
// so its group's niceness was left alone: changing it would nice the rest
// of that session too.
var ErrSharedGroup = errors.New("the process shares its scheduling group with its session")

// LowerGroup gives this process a scheduling group of its own at niceness
// n, where the kernel groups processes for scheduling by session
// (autogroup, on by default in most distributions).
//
// With autogroup the CPU is shared fairly between sessions first, and a
// thread's niceness only counts against the threads of its own session: a
// worker niced inside the session that also runs the API still took a
// session's full share from Postgres whenever both were busy, and the
// partners' status reads waited behind it. In a session of its own at
// niceness n, the worker's whole group yields as its threads do. (With 100,000
// accounts in make bench-scale, status p99 was 13-20 ms with autogroup on and
// 5.8-8.2 ms with it off; the worker's own group is one part of closing that
// gap: Postgres's backends share one group whoever they serve.) A process that cannot start a
// session (it leads a process group already) and does not lead its own
// keeps its group: ErrSharedGroup. Without autogroup it does nothing.
func LowerGroup(n int) error {
	if n <= 0 {
		return nil
	}
	if _, err := os.Stat("/proc/self/autogroup"); errors.Is(err, fs.ErrNotExist) {
		return nil // a kernel without autogroup: threads' niceness is all there is
	}
	if _, err := unix.Setsid(); err != nil && !errors.Is(err, unix.EPERM) {
		return fmt.Errorf("lower group priority: new session: %w", err)
	}
	if sid, err := unix.Getsid(0); err != nil || sid != os.Getpid() {
		return ErrSharedGroup
	}
	cur, err := GroupNice()
	if err != nil {
		return err
	}
	if cur >= n {
		return nil
	}
	if err := os.WriteFile("/proc/self/autogroup", []byte(strconv.Itoa(n)), 0); err != nil {
		return fmt.Errorf("lower group priority: %w", err)
	}
	return nil
}

// GroupNice is the niceness of this process's scheduling group (autogroup).
func GroupNice() (int, error) {
	b, err := os.ReadFile("/proc/self/autogroup") // "/autogroup-86 nice 0"
	if err != nil {
		return 0, fmt.Errorf("group priority: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) != 3 || f[1] != "nice" {
		return 0, fmt.Errorf("group priority: unexpected %q", b)
	}
	n, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, fmt.Errorf("group priority: unexpected %q", b)
	}
	return n, nil
}
