package app

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// LowerPriority sets the niceness of every thread of this process to n (on
// Linux niceness is per thread; threads started later inherit it from the
// thread that starts them). A worker's batch work then yields the CPU to
// the API's interactive requests when both share a host, without anyone
// having to start it under nice(1).
func LowerPriority(n int) error {
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
		cur, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
		// The raw syscall returns 20 - nice; never raise a priority the
		// process was started with (nice(1) above n, or a container's).
		if err == nil && 20-cur >= n {
			continue
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, n); err != nil {
			return fmt.Errorf("lower priority of thread %d: %w", tid, err)
		}
	}
	return nil
}
