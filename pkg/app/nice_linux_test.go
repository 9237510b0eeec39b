package app

import (
	"os"
	"strconv"
	"syscall"
	"testing"
)

// The worker lowers its own priority: every thread ends at the niceness
// asked for, and a second call (already there) changes nothing.
func TestLowerPriorityEveryThread(t *testing.T) {
	if err := LowerPriority(0); err != nil {
		t.Fatal(err)
	}
	// Run in a child so this test process keeps its priority.
	if os.Getenv("NICE_CHILD") == "" {
		exe, _ := os.Executable()
		cmd := []string{exe, "-test.run=^TestLowerPriorityEveryThread$", "-test.count=1"}
		p, err := os.StartProcess(exe, cmd, &os.ProcAttr{Env: append(os.Environ(), "NICE_CHILD=1"), Files: []*os.File{nil, os.Stdout, os.Stderr}})
		if err != nil {
			t.Fatal(err)
		}
		st, err := p.Wait()
		if err != nil || !st.Success() {
			t.Fatalf("child: %v %v", st, err)
		}
		return
	}
	for i := 0; i < 2; i++ {
		if err := LowerPriority(7); err != nil {
			t.Fatal(err)
		}
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		cur, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
		if err != nil {
			t.Fatal(err)
		}
		if nice := 20 - cur; nice != 7 {
			t.Errorf("thread %d: nice %d, want 7", tid, nice)
		}
	}
}
