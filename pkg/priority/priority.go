// Package priority lowers the CPU priority of batch work, so that on a
// shared host it yields to interactive requests (a partner's status read
// must not wait behind a bulk upload's parsing or a worker's batch).
//
// On Linux niceness belongs to a thread, not a process: Lower renices every
// thread of the process (threads started later inherit it from the thread
// that starts them), and Run gives one function a thread of its own at a
// lower priority. Elsewhere both do nothing.
package priority

import "runtime"

// Run calls fn on an OS thread of its own with niceness n (n <= 0: on the
// caller's goroutine, unchanged) and returns fn's error. The thread is
// thrown away afterwards, never handed back to other goroutines niced: a
// process may not raise a priority again without privileges.
func Run(n int, fn func() error) error {
	if n <= 0 {
		return fn()
	}
	done := make(chan error, 1)
	go func() {
		// Locked and never unlocked: the runtime ends the thread with
		// this goroutine.
		runtime.LockOSThread()
		var err error
		defer func() {
			if p := recover(); p != nil {
				done <- panicError{p}
				return
			}
			done <- err
		}()
		_ = lowerThread(0, n) // best effort: fn runs either way
		err = fn()
	}()
	err := <-done
	if pe, ok := err.(panicError); ok {
		panic(pe.v) // on the caller's goroutine, where its recovery is
	}
	return err
}

type panicError struct{ v any }

func (p panicError) Error() string { return "panic" }
