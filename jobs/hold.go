package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// A Paused supplier holds its creations; Complete ends what has not
// started (CONTRACT §14). Postgres decides (postgres/hold.go); these are
// the worker's answers to what it decided.

// ErrHeld is returned by an attempt held because its supplier is Paused.
// It is a kind of ErrWaiting: not a failure, tried again without using up
// its retries, a little less often than an attempt waiting for a slot.
var ErrHeld = fmt.Errorf("%w: supplier paused", ErrWaiting)

// HoldStore is what holding and ending an attempt needs.
type HoldStore interface {
	HoldAttempt(ctx context.Context, processID int64, attempt int) (bool, error)
	EndOnComplete(ctx context.Context, processID int64, attempt int, supplierCode string) error
}

// notOngoing answers an attempt whose supplier is not Ongoing: held while
// Paused (ErrHeld, or "" when the attempt is no longer current), ended as
// CANCELLED when Complete. The attempt's slot, if it has one, is given back
// by the caller (ProcessTask, on either answer).
func (h *CreateAccountHandler) notOngoing(ctx context.Context, lp postgres.LoadedProcess, attempt int) (string, error) {
	switch lp.Supplier.Status {
	case dataimport.SupplierComplete:
		if err := h.Store.EndOnComplete(ctx, lp.Process.ID, attempt, lp.Supplier.Code); err != nil {
			return "", err
		}
		return postgres.OutcomeCancelled, nil
	case dataimport.SupplierPaused:
		held, err := h.Store.HoldAttempt(ctx, lp.Process.ID, attempt)
		if err != nil {
			return "", err
		}
		if !held {
			return "", errStale
		}
		return "", ErrHeld
	}
	// Ongoing again already: start over at once.
	return "", ErrWaiting
}

// BrakeStore measures a supplier's recent creations against its brake.
type BrakeStore interface {
	CheckBrake(ctx context.Context, supplierID int64) (postgres.BrakeTripped, bool, error)
}

// Brakes checks suppliers' error-rate brakes after failures, at most once
// per Every per supplier in this process: the rate can only cross the
// threshold when a failure lands, and the look reads the supplier's last
// window of outcomes.
type Brakes struct {
	Store BrakeStore
	Log   *slog.Logger
	Every time.Duration // 0: 500 ms

	mu   sync.Mutex
	last map[int64]time.Time
}

// Check looks at the supplier's brake unless it was looked at very
// recently; a trip is logged (the store audited it and told the partner).
func (b *Brakes) Check(ctx context.Context, supplierID int64) {
	if b == nil || b.Store == nil {
		return
	}
	every := b.Every
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	b.mu.Lock()
	if b.last == nil {
		b.last = map[int64]time.Time{}
	}
	if t, ok := b.last[supplierID]; ok && time.Since(t) < every {
		b.mu.Unlock()
		return
	}
	b.last[supplierID] = time.Now()
	b.mu.Unlock()
	trip, tripped, err := b.Store.CheckBrake(ctx, supplierID)
	switch {
	case err != nil && !errors.Is(err, context.Canceled):
		b.Log.WarnContext(ctx, "error-rate brake not checked", "supplier_id", supplierID, "err", err.Error())
	case tripped:
		b.Log.WarnContext(ctx, "error-rate brake tripped: supplier paused", "supplier", trip.Supplier, "reason", trip.Reason)
	}
}
