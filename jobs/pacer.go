package jobs

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Pacer holds bulk job rounds back while partners' uploads stream in fast.
//
// Receiving is the interactive half of a migration: the partner's request
// is open until the body is durable, and the API decodes and validates
// every line on its way to Postgres. Overlapped with a job's rounds on the
// benchmark's two cores, the two kept the CPU saturated (1-2% idle) and a
// status read waited 20-40 ms (p99 per second) for its API goroutine and its
// Postgres backend to run, against 8-13 ms while uploads ran alone and
// 5-8 ms while rounds ran alone (make bench-scale, 100,000 accounts).
// Niceness does not separate them where the kernel groups tasks by session
// (Linux autogroup, on by default): every Postgres backend shares the
// postmaster's group, so a batch session's lower priority counts only
// among Postgres's backends. So the rounds wait while uploads arrive faster
// than Fast lines a second across the cluster, while a new upload's pace
// is not known yet, and a window after the last fast reading (a slow
// upload, which costs little, holds nothing back once its pace is known),
// each wait at most MaxHold, so a job always moves on; the CPU work is the
// same either way, done one after the other.
type Pacer struct {
	// Receiving reads how many lines each job still receiving has
	// received so far (postgres.DB.ReceivingLines).
	Receiving func(ctx context.Context) (map[int64]int64, error)
	Log       *slog.Logger
	Every     time.Duration // between reads; 0: 500 ms
	Fast      float64       // lines a second above which rounds wait; 0: 500
	MaxHold   time.Duration // the longest one round waits; 0: 10 s

	mu       sync.Mutex
	readings []reading     // the readings back to the first older than window, oldest first
	rate     float64       // lines a second received over the readings
	busy     bool          // rounds wait
	fastAt   time.Time     // when the readings last showed uploads arriving fast
	calm     chan struct{} // closed (and dropped) when rounds may go on
	held     time.Duration
}

type reading struct {
	at       time.Time
	received map[int64]int64
}

// window is how far back the rate looks: longer than the uploads'
// heartbeat (a second), which is how often a job's count moves between
// its batches.
const window = 2 * time.Second

func (p *Pacer) defaults() (every time.Duration, fast float64, maxHold time.Duration) {
	every, fast, maxHold = p.Every, p.Fast, p.MaxHold
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	if fast <= 0 {
		fast = 500
	}
	if maxHold <= 0 {
		maxHold = 10 * time.Second
	}
	return
}

// Run reads the receiving jobs' progress until ctx ends.
func (p *Pacer) Run(ctx context.Context) {
	every, _, _ := p.defaults()
	t := time.NewTicker(every)
	defer t.Stop()
	failed := false
	for {
		n, err := p.Receiving(ctx)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			if !failed && p.Log != nil {
				p.Log.WarnContext(ctx, "receiving jobs unreadable; bulk rounds are not held meanwhile", "err", err.Error())
			}
			failed = true
			p.Observe(nil, time.Now()) // unknown: hold nothing
		default:
			failed = false
			p.Observe(n, time.Now())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Observe takes one reading of the receiving jobs' lines at now (nil:
// unknown, which holds nothing back).
func (p *Pacer) Observe(received map[int64]int64, now time.Time) {
	_, fast, _ := p.defaults()
	p.mu.Lock()
	defer p.mu.Unlock()
	if received == nil {
		p.readings = p.readings[:0]
	} else {
		p.readings = append(p.readings, reading{at: now, received: received})
		for len(p.readings) > 2 && now.Sub(p.readings[1].at) >= window {
			p.readings = p.readings[1:]
		}
	}
	p.rate = 0
	fresh := false
	if n := len(p.readings); n > 0 {
		first, last := p.readings[0], p.readings[n-1]
		var lines int64
		// Only jobs still receiving count: when the last upload is in, the
		// rounds go on (after the hysteresis below).
		for id, got := range last.received {
			before, ok := first.received[id]
			if !ok || n == 1 {
				// An upload that began within the window: its pace is not
				// known yet (its first heartbeat comes a second in), and a
				// fast one is at its most expensive from the start.
				fresh = true
			} else if got > before {
				lines += got - before
			}
		}
		if dt := last.at.Sub(first.at).Seconds(); dt > 0 {
			p.rate = float64(lines) / dt
		}
	}
	if fresh || p.rate >= fast {
		p.fastAt = now
	}
	// Rounds wait a window past the last fast reading: an upload's last
	// transaction (its final batch and the duplicate-line marking) runs
	// after its count stopped moving.
	p.busy = received != nil && !p.fastAt.IsZero() && now.Sub(p.fastAt) < window
	if !p.busy && p.calm != nil {
		close(p.calm)
		p.calm = nil
	}
}

// Rate is the lines a second the cluster received at the last reading.
func (p *Pacer) Rate() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rate
}

// Busy reports whether rounds wait at the last reading.
func (p *Pacer) Busy() bool {
	if p == nil {
		return false // a nil Pacer never holds
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.busy
}

// Hold waits while uploads arrive fast, at most MaxHold, and returns how
// long it waited. A nil Pacer never waits.
func (p *Pacer) Hold(ctx context.Context) (time.Duration, error) {
	if p == nil {
		return 0, ctx.Err()
	}
	_, _, maxHold := p.defaults()
	p.mu.Lock()
	if !p.busy {
		p.mu.Unlock()
		return 0, ctx.Err()
	}
	if p.calm == nil {
		p.calm = make(chan struct{})
	}
	calm := p.calm
	p.mu.Unlock()
	t0 := time.Now()
	tm := time.NewTimer(maxHold)
	defer tm.Stop()
	select {
	case <-ctx.Done():
	case <-calm:
	case <-tm.C:
	}
	d := time.Since(t0)
	p.mu.Lock()
	p.held += d
	p.mu.Unlock()
	return d, ctx.Err()
}

// Held is the total time rounds waited.
func (p *Pacer) Held() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}
