package priority

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// startSleeper starts a child that sleeps, in a session of its own or not.
func startSleeper(t *testing.T, ownSession bool) int {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: ownSession}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd.Process.Pid
}

// A process leading its own session (as a Postgres backend does) has its
// session group lowered, once, and never raised; one sharing its session
// (the test binary's) is refused, so no other process is lowered with it.
func TestLowerSessionGroup(t *testing.T) {
	if on, err := os.ReadFile(autogroupEnabled); err != nil || strings.TrimSpace(string(on)) != "1" {
		t.Skip("the kernel's session groups are off here: nothing to lower")
	}
	leader := startSleeper(t, true)
	if changed, err := LowerSessionGroup(leader, 7); err != nil || !changed {
		t.Fatalf("lowering its own session group: changed %v, %v", changed, err)
	}
	path := filepath.Join("/proc", itoa(leader), "autogroup")
	if n, err := groupNice(path); err != nil || n != 7 {
		t.Fatalf("session group at nice %d (%v), want 7", n, err)
	}
	if changed, err := LowerSessionGroup(leader, 3); err != nil || changed {
		t.Fatalf("a nicer group was changed: %v, %v", changed, err)
	}
	if n, _ := groupNice(path); n != 7 {
		t.Fatalf("session group raised to nice %d", n)
	}
	member := startSleeper(t, false)
	if _, err := LowerSessionGroup(member, 7); err == nil {
		t.Fatal("a process sharing the test's session had its group lowered")
	}
	if n, err := groupNice(filepath.Join("/proc", itoa(member), "autogroup")); err != nil || n != 0 {
		t.Fatalf("the shared session group at nice %d (%v), want 0", n, err)
	}
}

// With session groups off, nothing is done.
func TestLowerSessionGroupOff(t *testing.T) {
	off := filepath.Join(t.TempDir(), "enabled")
	if err := os.WriteFile(off, []byte("0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := autogroupEnabled
	autogroupEnabled = off
	defer func() { autogroupEnabled = old }()
	if changed, err := LowerSessionGroup(os.Getpid(), 7); err != nil || changed {
		t.Fatalf("session groups off: changed %v, %v", changed, err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
