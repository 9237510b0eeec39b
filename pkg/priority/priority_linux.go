package priority

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

// Lower sets the niceness of every thread of this process to n; a thread
// already nicer (started under nice(1), say) is left alone. n <= 0: nothing.
//
// A thread inherits its niceness from the thread that starts it, so one
// started during a pass by a thread not reniced yet would keep priority 0
// for good (a worker thread was found that way, busy at nice 0). Passes
// repeat until one finds nothing to change: every thread is then niced,
// and so is any thread they start.
func Lower(n int) error {
	if n <= 0 {
		return nil
	}
	for i := range 100 {
		if i > 0 {
			// A thread being started while its parent was reniced took
			// the old priority and shows in /proc only once started: let
			// such starts finish before the pass that must find nothing.
			time.Sleep(settle)
		}
		changed, err := lowerPass(n)
		if err != nil || !changed {
			return err
		}
	}
	return fmt.Errorf("lower priority: threads kept appearing at a higher priority")
}

// settle is how long a pass after a change waits for threads being started.
const settle = 5 * time.Millisecond

// lowerPass renices the threads listed now and tells whether any changed.
func lowerPass(n int) (changed bool, err error) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return false, fmt.Errorf("lower priority: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		did, err := lowerThread(tid, n)
		if errors.Is(err, syscall.ESRCH) {
			// It ended before we reached it, perhaps after starting a
			// thread at its priority: look again.
			changed = true
			continue
		}
		if err != nil {
			return changed, err
		}
		changed = changed || did
	}
	return changed, nil
}

// lowerThread renices thread tid to n unless it is already at n or nicer,
// and tells whether it changed it.
func lowerThread(tid, n int) (bool, error) {
	// The raw syscall answers 20 - nice.
	cur, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return false, fmt.Errorf("priority of thread %d: %w", tid, err)
	}
	if 20-cur >= n {
		return false, nil
	}
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, n); err != nil {
		return false, fmt.Errorf("lower priority of thread %d: %w", tid, err)
	}
	return true, nil
}

// Nice is thread tid's niceness (0: the calling thread).
func Nice(tid int) (int, error) {
	if tid == 0 {
		tid = syscall.Gettid()
	}
	cur, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return 0, fmt.Errorf("priority of thread %d: %w", tid, err)
	}
	return 20 - cur, nil
}

// LowerProcess sets the niceness of process (or thread) pid to n unless it
// is already at n or nicer, and tells whether it changed it. It is for a
// single-threaded helper process serving this one (a Postgres backend).
func LowerProcess(pid, n int) (bool, error) {
	if n <= 0 {
		return false, nil
	}
	return lowerThread(pid, n)
}
