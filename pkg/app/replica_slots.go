package app

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/gridshift/dataimport/jobs"
	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/payments"
	"github.com/gridshift/dataimport/pkg/queue"
)

// countingSlots is the cluster-wide semaphore as this worker's creation
// handlers use it, counting the slots they hold now: the replica's busy
// figure. The semaphore itself only knows cluster-wide holders.
type countingSlots struct {
	jobs.BatchSlots
	mu   sync.Mutex
	held map[string]struct{}
}

var _ jobs.SlotTracker = (*countingSlots)(nil)

func newCountingSlots(s jobs.BatchSlots) *countingSlots {
	return &countingSlots{BatchSlots: s, held: map[string]struct{}{}}
}

func (c *countingSlots) AcquireFor(ctx context.Context, holder string, own queue.Owner, caps queue.Caps) (bool, error) {
	ok, err := c.BatchSlots.AcquireFor(ctx, holder, own, caps)
	if ok {
		c.Holding(holder)
	}
	return ok, err
}

func (c *countingSlots) AcquireManyFor(ctx context.Context, holders []string, own queue.Owner, caps queue.Caps, fair bool) (int, error) {
	n, err := c.BatchSlots.AcquireManyFor(ctx, holders, own, caps, fair)
	c.mu.Lock()
	for _, h := range holders[:max(0, min(n, len(holders)))] {
		c.held[h] = struct{}{}
	}
	c.mu.Unlock()
	return n, err
}

func (c *countingSlots) Release(ctx context.Context, holder string) error {
	c.Done(holder)
	return c.BatchSlots.Release(ctx, holder)
}

func (c *countingSlots) ReleaseMany(ctx context.Context, holders []string) error {
	c.mu.Lock()
	for _, h := range holders {
		delete(c.held, h)
	}
	c.mu.Unlock()
	return c.BatchSlots.ReleaseMany(ctx, holders)
}

// Holding implements jobs.SlotTracker.
func (c *countingSlots) Holding(holder string) {
	c.mu.Lock()
	c.held[holder] = struct{}{}
	c.mu.Unlock()
}

// Done implements jobs.SlotTracker.
func (c *countingSlots) Done(holder string) {
	c.mu.Lock()
	delete(c.held, holder)
	c.mu.Unlock()
}

// Busy is how many slots this worker's creations hold now.
func (c *countingSlots) Busy() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.held)
}

// clusterVendors is the worker's payment vendor lookup: its own vendors,
// plus those live API replicas accept that it cannot serve. Validation
// then accepts what the API accepted (an account is not refused for good,
// `"STRIPE" is not a valid choice`, because of where it landed), and the
// verification of such a vendor's instruction answers "wait": the task is
// tried again within a second without using up its retries, until a worker
// that has the vendor takes it. Meanwhile this worker's /readyz says 503
// and the console flags it.
type clusterVendors struct {
	own     *payments.Registry
	replica *replica
}

func (c clusterVendors) Vendor(name string) (payments.Vendor, bool) {
	if v, ok := c.own.Vendor(name); ok {
		return v, true
	}
	if slices.Contains(c.replica.Unserved(), name) {
		return unservedVendor(name), true
	}
	return nil, false
}

func (c clusterVendors) Names() []string {
	return slices.Sorted(slices.Values(append(c.own.Names(), c.replica.Unserved()...)))
}

// unservedVendor stands for a vendor this worker lacks.
type unservedVendor string

func (u unservedVendor) Verify(context.Context, dataimport.PaymentInstructionType, string) (dataimport.PaymentDetails, error) {
	return dataimport.PaymentDetails{}, fmt.Errorf("payment vendor %s is accepted by the API but not configured on this worker: %w", string(u), jobs.ErrWaiting)
}
