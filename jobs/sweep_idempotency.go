package jobs

import (
	"context"
	"log/slog"
	"time"
)

// IdempotencyKeyStore deletes expired idempotency keys.
type IdempotencyKeyStore interface {
	SweepIdempotencyKeys(ctx context.Context, limit int) (int64, error)
}

// IdempotencySweeper deletes idempotency keys past IDEMPOTENCY_TTL (CONTRACT
// §12) so that the table holds about one TTL of keys. Every worker runs one;
// their deletes skip each other's rows. Each statement is bounded, so a
// backlog never becomes one long transaction.
type IdempotencySweeper struct {
	Store      IdempotencyKeyStore
	Log        *slog.Logger
	Every      time.Duration // pause between passes
	Batch      int           // keys per statement; default 1000
	MaxBatches int           // statements per pass; default 100
}

// Run sweeps at once, then every Every, until ctx ends.
func (s *IdempotencySweeper) Run(ctx context.Context) {
	t := time.NewTicker(s.Every)
	defer t.Stop()
	for {
		if n, err := s.Once(ctx); err != nil && ctx.Err() == nil {
			s.Log.WarnContext(ctx, "sweeping idempotency keys failed", "err", err.Error())
		} else if n > 0 {
			s.Log.InfoContext(ctx, "swept expired idempotency keys", "deleted", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Once does one pass: batches until one comes back short (nothing left) or
// MaxBatches ran. It returns how many keys it deleted.
func (s *IdempotencySweeper) Once(ctx context.Context) (int64, error) {
	batch, maxBatches := s.Batch, s.MaxBatches
	if batch <= 0 {
		batch = 1000
	}
	if maxBatches <= 0 {
		maxBatches = 100
	}
	var total int64
	for range maxBatches {
		n, err := s.Store.SweepIdempotencyKeys(ctx, batch)
		total += n
		if err != nil {
			return total, err
		}
		if n < int64(batch) || ctx.Err() != nil {
			break
		}
	}
	return total, nil
}
