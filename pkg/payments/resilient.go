package payments

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/sony/gobreaker/v2"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Policy bounds how hard Resilient tries within one partner request.
type Policy struct {
	Tries           int           // attempts per Verify, the first included
	Budget          time.Duration // wall-clock bound of one Verify: attempts and waits
	InitialBackoff  time.Duration // first wait between attempts (before jitter)
	MaxBackoff      time.Duration // longest wait between attempts
	Jitter          float64       // randomization factor: a wait is interval × (1 ± Jitter)
	BreakerFailures uint32        // consecutive failed attempts that open the breaker
	BreakerOpen     time.Duration // how long it stays open before one probe is let through
}

// DefaultPolicy is the interface's "retried with backoff inside the request":
// 3 tries within 5 s; five failed attempts in a row (about two requests'
// worth) mean the vendor is down, and for 30 s requests fail fast with 400
// instead of each waiting out the budget.
func DefaultPolicy() Policy {
	return Policy{Tries: 3, Budget: 5 * time.Second, InitialBackoff: 250 * time.Millisecond, MaxBackoff: 2 * time.Second,
		Jitter: 0.5, BreakerFailures: 5, BreakerOpen: 30 * time.Second}
}

type resilient struct {
	name string
	v    Vendor
	p    Policy
	cb   *gobreaker.CircuitBreaker[dataimport.PaymentDetails]
	log  *slog.Logger
}

// Resilient wraps an adapter with the interface's failure semantics:
// transient failures are retried with exponential backoff and jitter, at
// most p.Tries attempts within p.Budget; a circuit breaker counts failed
// attempts (transient or persistent ones; a "not found" is the vendor
// working) and, once open, answers KindPersistent without calling the
// vendor. After the retries a failure is still KindTransient (the partner
// retries as is); a budget spent on slow answers is KindTransient too.
// The adapter must not retry itself. log may be nil.
func Resilient(name string, v Vendor, p Policy, log *slog.Logger) Vendor {
	if log == nil {
		log = slog.Default()
	}
	if p.Tries < 1 {
		p.Tries = 1
	}
	r := &resilient{name: name, v: v, p: p, log: log}
	r.cb = gobreaker.NewCircuitBreaker[dataimport.PaymentDetails](gobreaker.Settings{
		Name:        name,
		MaxRequests: 1,
		Timeout:     p.BreakerOpen,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= p.BreakerFailures },
		IsSuccessful: func(err error) bool {
			k := KindOf(err)
			return err == nil || k == KindNotFound || k == KindRejected
		},
		// The caller leaving says nothing about the vendor.
		IsExcluded: func(err error) bool { return KindOf(err) == 0 && errors.Is(err, context.Canceled) },
		OnStateChange: func(name string, from, to gobreaker.State) {
			log.Warn("payment vendor circuit breaker", "vendor", name, "from", from.String(), "to", to.String())
		},
	})
	return r
}

func (r *resilient) Verify(parent context.Context, typ dataimport.PaymentInstructionType, reference string) (dataimport.PaymentDetails, error) {
	ctx, cancel := context.WithTimeout(parent, r.p.Budget)
	defer cancel()
	expo := backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(r.p.InitialBackoff),
		backoff.WithMaxInterval(r.p.MaxBackoff),
		backoff.WithMultiplier(2),
		backoff.WithRandomizationFactor(r.p.Jitter),
		backoff.WithMaxElapsedTime(r.p.Budget),
	)
	policy := backoff.WithContext(backoff.WithMaxRetries(expo, uint64(r.p.Tries-1)), ctx)
	attempt := 0
	op := func() (dataimport.PaymentDetails, error) {
		attempt++
		d, err := r.cb.Execute(func() (dataimport.PaymentDetails, error) { return r.v.Verify(ctx, typ, reference) })
		switch {
		case err == nil:
			return d, nil
		case errors.Is(err, gobreaker.ErrOpenState), errors.Is(err, gobreaker.ErrTooManyRequests):
			return d, backoff.Permanent(Errorf(KindPersistent, err,
				"%s is failing persistently (%d failed calls in a row); calls to it are suspended for up to %s.",
				r.name, r.p.BreakerFailures, r.p.BreakerOpen))
		case KindOf(err) == KindTransient:
			return d, err
		}
		return d, backoff.Permanent(err)
	}
	notify := func(err error, wait time.Duration) {
		r.log.WarnContext(ctx, "payment vendor attempt failed; retrying", "vendor", r.name, "attempt", attempt, "wait", wait, "err", err.Error())
	}
	d, err := backoff.RetryNotifyWithData(op, policy, notify)
	if err != nil && KindOf(err) == 0 && errors.Is(err, context.DeadlineExceeded) && parent.Err() == nil {
		err = Errorf(KindTransient, err, "%s did not answer within %s (%d attempts).", r.name, r.p.Budget, attempt)
	}
	return d, err
}
