package testutil

import (
	"testing"
	"time"
)

// FailUntilThrottled makes failing attempts (try(i), i from 0) until one
// answers throttled, and returns how many failures were let through. The
// failure throttles are GCRA buckets of perMinute failures: one more
// failure fits for every minute/perMinute that passes, so a slow machine
// (slow bcrypt) may need more than perMinute attempts; more than that bound
// allows fails the test. try checks a non-throttled answer is the failure
// it expects.
func FailUntilThrottled(tb testing.TB, perMinute int, try func(i int) (throttled bool)) int {
	tb.Helper()
	start := time.Now()
	interval := time.Minute / time.Duration(perMinute)
	for i := 0; ; i++ {
		if try(i) {
			if i < perMinute {
				tb.Fatalf("throttled after %d failures, want %d first", i, perMinute)
			}
			return i
		}
		if budget := perMinute + int(time.Since(start)/interval); i+1 > budget {
			tb.Fatalf("%d failures in %s and not throttled (at most %d fit)", i+1, time.Since(start).Round(time.Millisecond), budget)
		}
	}
}
