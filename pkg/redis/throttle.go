package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/go-redis/redis_rate/v10"
	goredis "github.com/redis/go-redis/v9"
)

// FailureThrottle slows down repeated failures from one client (e.g. wrong
// API keys): after Limit failures within a minute the client is refused until
// the window lets it in again. Counted in Redis so that every API replica
// shares one count.
type FailureThrottle struct {
	limiter *redis_rate.Limiter
	limit   redis_rate.Limit
	prefix  string
}

// NewFailureThrottle allows perMinute failures a minute per key.
func NewFailureThrottle(c goredis.UniversalClient, prefix string, perMinute int) *FailureThrottle {
	return &FailureThrottle{limiter: redis_rate.NewLimiter(c), limit: redis_rate.PerMinute(perMinute), prefix: prefix}
}

// Blocked reports whether key has used up its failures, and for how long.
func (t *FailureThrottle) Blocked(ctx context.Context, key string) (bool, time.Duration, error) {
	// A zero-cost request reads the bucket without spending from it.
	res, err := t.limiter.AllowN(ctx, t.prefix+key, t.limit, 0)
	if err != nil {
		return false, 0, fmt.Errorf("throttle check: %w", err)
	}
	if res.Remaining > 0 {
		return false, 0, nil
	}
	// GCRA frees one unit every interval; the next failure fits once the
	// bucket has drained below Burst-1 units.
	interval := t.limit.Period / time.Duration(t.limit.Rate)
	wait := res.ResetAfter - time.Duration(t.limit.Burst-1)*interval
	if wait < time.Second {
		wait = time.Second
	}
	return true, wait, nil
}

// Failed records n failures for key.
func (t *FailureThrottle) Failed(ctx context.Context, key string, n int) error {
	// GCRA refuses, and so would not record, a cost above the burst.
	n = min(n, t.limit.Burst)
	if _, err := t.limiter.AllowN(ctx, t.prefix+key, t.limit, n); err != nil {
		return fmt.Errorf("throttle record: %w", err)
	}
	return nil
}
