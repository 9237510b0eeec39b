package webhook

import (
	"math/rand/v2"
	"time"
)

// Schedule is the retry schedule of a delivery: attempt 1 is sent at once,
// attempt n+1 is due Base·Factor^(n-1) after attempt n failed (capped at
// Cap), each delay spread by ±Jitter so that retries to a recovered
// endpoint do not all arrive together. After MaxAttempts the delivery is
// given up (state failed).
//
// DefaultSchedule: 10 s, 30 s, 1.5 min, 4.5 min, 13.5 min, 40.5 min, 2 h,
// 6 h, 7 h, 7 h after the first attempt's failure: eleven attempts over
// about 24 hours.
type Schedule struct {
	Base        time.Duration
	Factor      float64
	Cap         time.Duration
	Jitter      float64 // 0.2: each delay is drawn from [0.8, 1.2)·delay
	MaxAttempts int
}

// DefaultSchedule is the production schedule (WEBHOOK_RETRY_BASE=10s).
var DefaultSchedule = ScaledSchedule(10 * time.Second)

// ScaledSchedule is the default schedule's shape from another first delay
// (WEBHOOK_RETRY_BASE): the cap scales with it, so tests run the same
// eleven attempts in seconds.
func ScaledSchedule(base time.Duration) Schedule {
	return Schedule{Base: base, Factor: 3, Cap: base * 2520, Jitter: 0.2, MaxAttempts: 11}
}

// Delay is the nominal wait after failed attempt n (1-based), without
// jitter.
func (s Schedule) Delay(n int) time.Duration {
	d := float64(s.Base)
	for i := 1; i < n; i++ {
		d *= s.Factor
		if d >= float64(s.Cap) {
			return s.Cap
		}
	}
	return min(time.Duration(d), s.Cap)
}

// Next is the jittered wait after failed attempt n, and whether there is a
// next attempt at all.
func (s Schedule) Next(n int) (time.Duration, bool) {
	if n >= s.MaxAttempts {
		return 0, false
	}
	d := float64(s.Delay(n))
	j := 1 + s.Jitter*(2*rand.Float64()-1)
	return time.Duration(d * j), true
}

// Total is the nominal time from the first attempt to the last.
func (s Schedule) Total() time.Duration {
	var t time.Duration
	for n := 1; n < s.MaxAttempts; n++ {
		t += s.Delay(n)
	}
	return t
}
