package queue

import (
	"context"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// EndpointInFlight bounds the webhook attempts in flight per endpoint across
// every worker: one semaphore (see Semaphore) per endpoint. Leases outlive
// any attempt, so a killed worker's slot frees itself.
type EndpointInFlight struct {
	Client goredis.UniversalClient
	Prefix string        // key prefix, e.g. "dataimport:webhook-inflight:"
	Limit  int           // attempts in flight per endpoint (WEBHOOK_ENDPOINT_CONCURRENCY)
	Lease  time.Duration // longer than one attempt
}

func (e *EndpointInFlight) sem(endpointID int64) *Semaphore {
	return NewSemaphore(e.Client, e.Prefix+strconv.FormatInt(endpointID, 10), e.Lease)
}

// Acquire takes one of the endpoint's slots for holder; false when full.
func (e *EndpointInFlight) Acquire(ctx context.Context, endpointID int64, holder string) (bool, error) {
	return e.sem(endpointID).Acquire(ctx, holder, e.Limit)
}

// Release gives holder's slot back.
func (e *EndpointInFlight) Release(ctx context.Context, endpointID int64, holder string) error {
	return e.sem(endpointID).Release(ctx, holder)
}
