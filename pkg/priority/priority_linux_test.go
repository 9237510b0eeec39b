package priority

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
)

// Lower renices every thread of the process, and never raises a priority
// (run in a child process, so the test binary keeps its own).
func TestLowerEveryThread(t *testing.T) {
	if runInChildren(t, "TestLowerEveryThread", 1) {
		return
	}
	if err := Lower(7); err != nil {
		t.Fatal(err)
	}
	if err := Lower(3); err != nil { // already nicer: unchanged
		t.Fatal(err)
	}
	everyThreadAt(t, 7)
}

// Threads started while Lower runs end up niced too: a thread inherits the
// niceness of the thread that starts it, so one started by a thread that a
// single pass had not reached yet kept priority 0 (a worker thread was
// found busy at nice 0 that way). Goroutines keep ending their locked
// threads so the runtime keeps starting new ones during Lower.
func TestLowerCatchesThreadsStartedMeanwhile(t *testing.T) {
	if runInChildren(t, "TestLowerCatchesThreadsStartedMeanwhile", 20) { // the window is short: try it often
		return
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				done := make(chan struct{})
				go func() {
					runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
					close(done)
				}()
				<-done
			}
		}()
	}
	err := Lower(7)
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	everyThreadAt(t, 7)
}

// runInChildren runs test in n child processes (so this test binary keeps
// its priority) and reports true; in a child it reports false.
func runInChildren(t *testing.T, test string, n int) bool {
	t.Helper()
	if os.Getenv("PRIORITY_CHILD") != "" {
		return false
	}
	for i := range n {
		cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
		cmd.Env = append(os.Environ(), "PRIORITY_CHILD=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, out)
		}
	}
	return true
}

// everyThreadAt checks that every thread of this process that is still
// there runs at niceness want.
func everyThreadAt(t *testing.T, want int) {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		if n, err := Nice(tid); err == nil && n != want {
			t.Errorf("thread %d: nice %d, want %d", tid, n, want)
		}
	}
}
