package priority

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// Lower sets the niceness of every thread of this process to n; a thread
// already nicer (started under nice(1), say) is left alone. n <= 0: nothing.
func Lower(n int) error {
	if n <= 0 {
		return nil
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("lower priority: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := lowerThread(tid, n); err != nil {
			return err
		}
	}
	return nil
}

// lowerThread renices thread tid (0: the calling thread) to n unless it is
// already at n or nicer.
func lowerThread(tid, n int) error {
	if tid == 0 {
		tid = syscall.Gettid()
	}
	// The raw syscall answers 20 - nice.
	if cur, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid); err == nil && 20-cur >= n {
		return nil
	}
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, n); err != nil {
		return fmt.Errorf("lower priority of thread %d: %w", tid, err)
	}
	return nil
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
