package queue

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Notifier wakes API requests waiting on an account's creation. It carries
// only a signal; the outcome itself is read from Postgres, so a lost message
// costs latency (waiters also poll), never correctness.
//
// One pattern subscription per API process fans signals out in memory, so a
// thousand waiting requests cost one Redis connection, not a thousand.
//
// Topologies: under Sentinel the subscription follows the master, and a
// failover breaks it, so Run subscribes again. Under Cluster, classic
// PUBLISH is broadcast over the cluster bus to every node, so the one
// PSUBSCRIBE (go-redis puts it on one node) hears publishes made on any node.
// That broadcast costs cluster-bus traffic per signal, which is small here.
// Sharded pub/sub (SPUBLISH/SSUBSCRIBE) would avoid it, but it has no pattern
// form. If that node fails, the subscription breaks and Run subscribes again.
// Signals lost meanwhile cost latency only, because waiters also poll.
type Notifier struct {
	rdb    goredis.UniversalClient
	prefix string

	mu      sync.Mutex
	waiters map[int64]map[chan struct{}]struct{}
}

// NewNotifier publishes and listens on channels named prefix+processID.
func NewNotifier(rdb goredis.UniversalClient, prefix string) *Notifier {
	return &Notifier{rdb: rdb, prefix: prefix, waiters: map[int64]map[chan struct{}]struct{}{}}
}

// Publish signals that an attempt of the process finished.
func (n *Notifier) Publish(ctx context.Context, processID int64) error {
	if err := n.rdb.Publish(ctx, n.prefix+strconv.FormatInt(processID, 10), "done").Err(); err != nil {
		return fmt.Errorf("publish outcome: %w", err)
	}
	return nil
}

// Run listens until ctx ends, re-subscribing after Redis outages.
func (n *Notifier) Run(ctx context.Context) {
	for ctx.Err() == nil {
		ps := n.rdb.PSubscribe(ctx, n.prefix+"*")
		for {
			msg, err := ps.ReceiveMessage(ctx)
			if err != nil {
				break
			}
			id, err := strconv.ParseInt(strings.TrimPrefix(msg.Channel, n.prefix), 10, 64)
			if err == nil {
				n.wake(id)
			}
		}
		_ = ps.Close()
		if ctx.Err() == nil {
			slog.WarnContext(ctx, "outcome subscription lost; resubscribing")
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

func (n *Notifier) wake(processID int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for ch := range n.waiters[processID] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Watch returns a channel signalled when the process's attempt finishes, and
// a function to stop watching. Register before checking the database, so a
// signal between the check and the wait is not missed.
func (n *Notifier) Watch(processID int64) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	if n.waiters[processID] == nil {
		n.waiters[processID] = map[chan struct{}]struct{}{}
	}
	n.waiters[processID][ch] = struct{}{}
	n.mu.Unlock()
	return ch, func() {
		n.mu.Lock()
		delete(n.waiters[processID], ch)
		if len(n.waiters[processID]) == 0 {
			delete(n.waiters, processID)
		}
		n.mu.Unlock()
	}
}
