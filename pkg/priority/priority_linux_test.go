package priority

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
)

// Run's function runs niced on a thread of its own; the caller's thread
// keeps its priority, and fn's error and panic reach the caller.
func TestRunNicesOnlyItsThread(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := Nice(0)
	if err != nil {
		t.Fatal(err)
	}
	var inside int
	want := errors.New("fn's error")
	got := Run(before+5, func() error {
		inside, err = Nice(0)
		return want
	})
	if err != nil || got != want {
		t.Fatalf("Run: %v, Nice: %v", got, err)
	}
	if inside != before+5 {
		t.Errorf("fn ran at nice %d, want %d", inside, before+5)
	}
	if after, _ := Nice(0); after != before {
		t.Errorf("caller's thread at nice %d after Run, was %d", after, before)
	}
	defer func() {
		if p := recover(); p != "boom" {
			t.Errorf("recovered %v, want fn's panic", p)
		}
	}()
	_ = Run(before+5, func() error { panic("boom") })
}

// Lower renices every thread of the process, and never raises a priority
// (run in a child process, so the test binary keeps its own).
func TestLowerEveryThread(t *testing.T) {
	if os.Getenv("PRIORITY_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLowerEveryThread$", "-test.count=1")
		cmd.Env = append(os.Environ(), "PRIORITY_CHILD=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	if err := Lower(7); err != nil {
		t.Fatal(err)
	}
	if err := Lower(3); err != nil { // already nicer: unchanged
		t.Fatal(err)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		if n, err := Nice(tid); err != nil || n != 7 {
			t.Errorf("thread %d: nice %d (%v), want 7", tid, n, err)
		}
	}
}
