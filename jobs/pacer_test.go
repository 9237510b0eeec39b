package jobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gridshift/dataimport/jobs"
)

type pacerReading struct {
	after    time.Duration // since the first reading
	received map[int64]int64
	busy     bool
}

// The rounds wait while uploads arrive faster than Fast lines a second over
// the last two seconds, while an upload that just began has no known pace,
// and for two seconds after the last fast reading; never for a slow upload
// once its pace is known, nor when the jobs cannot be read.
func TestPacerBusyWhileUploadsArriveFast(t *testing.T) {
	cases := map[string][]pacerReading{
		"a fast upload holds rounds until two seconds after it is in": {
			{0, map[int64]int64{}, false},
			{500 * time.Millisecond, map[int64]int64{1: 0}, true}, // began: pace unknown
			{time.Second, map[int64]int64{1: 0}, true},
			{1500 * time.Millisecond, map[int64]int64{1: 2000}, true},
			{2500 * time.Millisecond, map[int64]int64{1: 4000}, true}, // 4,000 lines in 2 s
			{3 * time.Second, map[int64]int64{}, true},                // received: its last transaction may still run
			{4400 * time.Millisecond, map[int64]int64{}, true},
			{5 * time.Second, map[int64]int64{}, false}, // two seconds after the last fast reading
		},
		"a slow upload holds rounds only until its pace is known": {
			{0, map[int64]int64{7: 100}, true}, // the first reading: its pace is unknown
			{time.Second, map[int64]int64{7: 200}, true},
			{2 * time.Second, map[int64]int64{7: 300}, false}, // 100 lines a second
			{3 * time.Second, map[int64]int64{7: 400}, false},
			{4 * time.Second, map[int64]int64{7: 1400}, true}, // 1,100 lines over the last 2 s: 550 a second
		},
		"several slow uploads together are fast": {
			{0, map[int64]int64{1: 0, 2: 0, 3: 0}, true},
			{2 * time.Second, map[int64]int64{1: 400, 2: 400, 3: 400}, true}, // 600 a second together
		},
		"unreadable jobs hold nothing": {
			{0, map[int64]int64{1: 0}, true},
			{time.Second, nil, false},
		},
	}
	for name, readings := range cases {
		t.Run(name, func(t *testing.T) {
			p := &jobs.Pacer{Fast: 500}
			t0 := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
			for i, r := range readings {
				p.Observe(r.received, t0.Add(r.after))
				if got := p.Busy(); got != r.busy {
					t.Fatalf("reading %d (%v, %v): busy %v, want %v (rate %.0f)", i, r.after, r.received, got, r.busy, p.Rate())
				}
			}
		})
	}
}

// A held round goes on as soon as a reading shows the uploads in, after
// MaxHold at the latest, or when its context ends; a nil Pacer never holds.
func TestPacerHold(t *testing.T) {
	busyPacer := func(maxHold time.Duration) (*jobs.Pacer, time.Time) {
		p := &jobs.Pacer{Fast: 500, MaxHold: maxHold}
		now := time.Now()
		p.Observe(map[int64]int64{1: 0}, now)
		if !p.Busy() {
			t.Fatal("a new upload does not hold rounds")
		}
		return p, now
	}
	t.Run("released by a calm reading", func(t *testing.T) {
		p, now := busyPacer(time.Hour)
		done := make(chan time.Duration, 1)
		go func() {
			d, err := p.Hold(t.Context())
			if err != nil {
				t.Error(err)
			}
			done <- d
		}()
		time.Sleep(50 * time.Millisecond)
		p.Observe(map[int64]int64{}, now.Add(3*time.Second))
		select {
		case d := <-done:
			if d < 40*time.Millisecond {
				t.Fatalf("held %v, want until the calm reading (50 ms)", d)
			}
			if p.Held() != d {
				t.Fatalf("Held() = %v, want %v", p.Held(), d)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a calm reading did not release the round")
		}
	})
	t.Run("at most MaxHold", func(t *testing.T) {
		p, _ := busyPacer(100 * time.Millisecond)
		d, err := p.Hold(t.Context())
		if err != nil || d < 100*time.Millisecond || d > 5*time.Second {
			t.Fatalf("held %v (%v), want MaxHold (100 ms)", d, err)
		}
	})
	t.Run("ends with its context", func(t *testing.T) {
		p, _ := busyPacer(time.Hour)
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		if _, err := p.Hold(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Hold = %v, want the context's end", err)
		}
	})
	t.Run("not busy", func(t *testing.T) {
		p := &jobs.Pacer{}
		p.Observe(map[int64]int64{}, time.Now())
		if d, err := p.Hold(t.Context()); d != 0 || err != nil {
			t.Fatalf("Hold = %v, %v; want no wait", d, err)
		}
		var none *jobs.Pacer
		if d, err := none.Hold(t.Context()); d != 0 || err != nil {
			t.Fatalf("nil Hold = %v, %v; want no wait", d, err)
		}
	})
}
