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

// Threads started while Lower runs end up niced too: a thread inherits the
// niceness of the thread that starts it, so one started by a thread that a
// single pass had not reached yet kept priority 0 (a worker thread was
// found busy at nice 0 that way). Goroutines keep ending their locked
// threads so the runtime keeps starting new ones during Lower.
func TestLowerCatchesThreadsStartedMeanwhile(t *testing.T) {
	if os.Getenv("PRIORITY_CHILD") == "" {
		for i := range 20 { // the window is short: try it often
			cmd := exec.Command(os.Args[0], "-test.run=^TestLowerCatchesThreadsStartedMeanwhile$", "-test.count=1")
			cmd.Env = append(os.Environ(), "PRIORITY_CHILD=1")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("child %d: %v\n%s", i, err, out)
			}
		}
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
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		if n, err := Nice(tid); err == nil && n != 7 {
			t.Errorf("thread %d at nice %d after Lower(7)", tid, n)
		}
	}
}
