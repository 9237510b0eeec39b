package payments

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// script is a fake vendor answering from a list of outcomes (the last one
// repeats), optionally slowly; it counts calls.
type script struct {
	mu    sync.Mutex
	errs  []error
	delay time.Duration
	calls int
}

func (s *script) Verify(ctx context.Context, _ dataimport.PaymentInstructionType, _ string) (dataimport.PaymentDetails, error) {
	s.mu.Lock()
	i := min(s.calls, len(s.errs)-1)
	s.calls++
	err := s.errs[i]
	s.mu.Unlock()
	if s.delay > 0 {
		select {
		case <-time.After(s.delay):
		case <-ctx.Done():
			return dataimport.PaymentDetails{}, Errorf(KindTransient, ctx.Err(), "slow")
		}
	}
	if err != nil {
		return dataimport.PaymentDetails{}, err
	}
	return dataimport.PaymentDetails{CardLast4: "4242"}, nil
}

func (s *script) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

var (
	transient  = Errorf(KindTransient, nil, "503")
	notFound   = Errorf(KindNotFound, nil, "missing")
	persistent = Errorf(KindPersistent, nil, "credentials refused")
	quiet      = slog.New(slog.NewTextHandler(io.Discard, nil))
)

func fastPolicy() Policy {
	return Policy{Tries: 3, Budget: 2 * time.Second, InitialBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
		Jitter: 0.5, BreakerFailures: 5, BreakerOpen: time.Hour}
}

func verify(v Vendor) (dataimport.PaymentDetails, error) {
	return v.Verify(context.Background(), dataimport.PaymentCard, "pm_1")
}

func TestResilientRetries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		errs      []error
		wantCalls int
		wantKind  Kind // 0: success
	}{
		{"success", []error{nil}, 1, 0},
		{"one transient then success", []error{transient, nil}, 2, 0},
		{"two transients then success", []error{transient, transient, nil}, 3, 0},
		{"transient every time: three tries", []error{transient}, 3, KindTransient},
		{"not found is final", []error{notFound}, 1, KindNotFound},
		{"persistent is final", []error{persistent}, 1, KindPersistent},
		{"transient then not found", []error{transient, notFound}, 2, KindNotFound},
		{"unclassified is final", []error{errors.New("boom")}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{errs: tc.errs}
			d, err := verify(Resilient("FAKE", s, fastPolicy(), quiet))
			if s.count() != tc.wantCalls {
				t.Fatalf("%d calls, want %d", s.count(), tc.wantCalls)
			}
			if tc.errs[len(tc.errs)-1] == nil {
				if err != nil || d.CardLast4 != "4242" {
					t.Fatalf("got %+v, %v", d, err)
				}
				return
			}
			if err == nil || KindOf(err) != tc.wantKind {
				t.Fatalf("err %v (kind %v), want kind %v", err, KindOf(err), tc.wantKind)
			}
		})
	}
}

func TestResilientBackoffHasJitter(t *testing.T) {
	// Waits between tries vary between runs (jitter) and grow (exponential).
	p := fastPolicy()
	p.InitialBackoff, p.MaxBackoff = 20*time.Millisecond, time.Second
	var firsts []time.Duration
	for range 5 {
		s := &script{errs: []error{transient}}
		var stamps []time.Time
		v := Resilient("FAKE", vendorFunc(func() error { stamps = append(stamps, time.Now()); _, err := verify(s); return err }), p, quiet)
		_, _ = verify(v)
		if len(stamps) != 3 {
			t.Fatalf("%d tries", len(stamps))
		}
		w1, w2 := stamps[1].Sub(stamps[0]), stamps[2].Sub(stamps[1])
		if w1 < 10*time.Millisecond || w2 < 20*time.Millisecond || w1 > 200*time.Millisecond || w2 > 300*time.Millisecond {
			t.Fatalf("waits %v, %v", w1, w2)
		}
		firsts = append(firsts, w1.Round(time.Millisecond))
	}
	slices.Sort(firsts)
	if slices.Equal(slices.Compact(slices.Clone(firsts)), firsts[:1]) {
		t.Fatalf("no jitter: %v", firsts)
	}
}

type vendorFunc func() error

func (f vendorFunc) Verify(context.Context, dataimport.PaymentInstructionType, string) (dataimport.PaymentDetails, error) {
	return dataimport.PaymentDetails{}, f()
}

func TestResilientBudget(t *testing.T) {
	p := fastPolicy()
	p.Budget = 300 * time.Millisecond
	s := &script{errs: []error{nil}, delay: time.Hour}
	start := time.Now()
	_, err := verify(Resilient("FAKE", s, p, quiet))
	if took := time.Since(start); took > time.Second {
		t.Fatalf("took %v with a 300ms budget", took)
	}
	if KindOf(err) != KindTransient {
		t.Fatalf("want transient, got %v", err)
	}
}

func TestResilientCallerGone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	v := Resilient("FAKE", vendorFunc(func() error {
		<-ctx.Done()
		return ctx.Err()
	}), fastPolicy(), quiet)
	_, err := v.Verify(ctx, dataimport.PaymentCard, "pm_1")
	if !errors.Is(err, context.DeadlineExceeded) || KindOf(err) != 0 {
		t.Fatalf("the caller's own deadline is not the vendor's failure: %v", err)
	}
}

func TestResilientBreaker(t *testing.T) {
	s := &script{errs: []error{transient}}
	p := fastPolicy()
	p.BreakerOpen = 200 * time.Millisecond
	v := Resilient("FAKE", s, p, quiet)
	// 3 failed tries: still closed, the partner retries as is.
	if _, err := verify(v); KindOf(err) != KindTransient || s.count() != 3 {
		t.Fatalf("first: %v after %d calls", err, s.count())
	}
	// Failures 4 and 5 open it; the third try is refused without a call.
	_, err := verify(v)
	var pe *Error
	if !errors.As(err, &pe) || pe.Kind != KindPersistent || s.count() != 5 || pe.Reason == "" {
		t.Fatalf("second: %v after %d calls", err, s.count())
	}
	// Open: no call at all.
	if _, err := verify(v); KindOf(err) != KindPersistent || s.count() != 5 {
		t.Fatalf("open: %v after %d calls", err, s.count())
	}
	// After BreakerOpen one probe goes through; its success closes it.
	time.Sleep(250 * time.Millisecond)
	s.mu.Lock()
	s.errs = []error{nil}
	s.calls = 0
	s.mu.Unlock()
	if _, err := verify(v); err != nil || s.count() != 1 {
		t.Fatalf("half-open probe: %v after %d calls", err, s.count())
	}
	if _, err := verify(v); err != nil {
		t.Fatalf("closed again: %v", err)
	}
}

func TestResilientBreakerIgnoresNotFound(t *testing.T) {
	s := &script{errs: []error{notFound}}
	v := Resilient("FAKE", s, fastPolicy(), quiet)
	for range 10 {
		if _, err := verify(v); KindOf(err) != KindNotFound {
			t.Fatalf("a vendor saying 'no such reference' is a working vendor: %v", err)
		}
	}
	if s.count() != 10 {
		t.Fatalf("%d calls", s.count())
	}
}

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	if len(r.Names()) != 0 {
		t.Fatal("not empty")
	}
	r.Register("STRIPE", &script{errs: []error{nil}})
	r.Register("GOCARDLESS", &script{errs: []error{nil}})
	if got := r.Names(); !slices.Equal(got, []string{"GOCARDLESS", "STRIPE"}) {
		t.Fatalf("names %v", got)
	}
	if _, ok := r.Vendor("STRIPE"); !ok {
		t.Fatal("STRIPE missing")
	}
	if _, ok := r.Vendor("stripe"); ok {
		t.Fatal("names are exact")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("registering twice must panic")
		}
	}()
	r.Register("STRIPE", &script{errs: []error{nil}})
}
