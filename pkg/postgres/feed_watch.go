package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Feed long-polls and webhook dispatchers wait for new events without
// polling Postgres: WatchFeed holds one LISTEN connection per process on
// FeedChannel (the relay NOTIFYs it after numbering events) and wakes every
// waiter at once. Waiters never rely on it for correctness, only for speed:
// they re-read the feed after waking, and while the connection is down
// WaitFeed returns every FeedPollWithoutListen instead.

// FeedPollWithoutListen is how often a waiter re-reads the feed while no
// LISTEN connection is up.
const FeedPollWithoutListen = time.Second

// ErrFeedWaitStopped is returned by WaitFeed once StopFeedWaits was called.
var ErrFeedWaitStopped = errors.New("feed waits stopped")

// feedWatch is a broadcast: changed is closed (and replaced) on every
// notification, and gen counts them, so a waiter that read the feed after
// taking gen cannot miss a wake-up that came in between.
type feedWatch struct {
	mu       sync.Mutex
	live     bool
	gen      uint64
	changed  chan struct{}
	stopped  chan struct{}
	stopOnce sync.Once
}

func newFeedWatch() *feedWatch {
	return &feedWatch{changed: make(chan struct{}), stopped: make(chan struct{})}
}

// wake tells every waiter to look again; live says whether later changes
// will be notified.
func (w *feedWatch) wake(live bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.live = live
	w.gen++
	close(w.changed)
	w.changed = make(chan struct{})
}

// FeedGeneration is the count of feed notifications so far. Take it before
// reading the feed, and pass it to WaitFeed after a read that found nothing.
func (db *DB) FeedGeneration() uint64 {
	db.feed.mu.Lock()
	defer db.feed.mu.Unlock()
	return db.feed.gen
}

// WaitFeed blocks until the feed may have new events since generation gen:
// a notification came (or had come already), the LISTEN connection went
// down or came back, or, while it is down, FeedPollWithoutListen passed. It
// returns ctx's error when ctx ends first and ErrFeedWaitStopped once
// StopFeedWaits was called. Callers re-read the feed after it returns nil.
func (db *DB) WaitFeed(ctx context.Context, gen uint64) error {
	w := db.feed
	w.mu.Lock()
	ch, live, moved := w.changed, w.live, w.gen != gen
	w.mu.Unlock()
	select {
	case <-w.stopped:
		return ErrFeedWaitStopped
	default:
	}
	if moved {
		return nil
	}
	var poll <-chan time.Time
	if !live {
		t := time.NewTimer(FeedPollWithoutListen)
		defer t.Stop()
		poll = t.C
	}
	select {
	case <-ch:
		return nil
	case <-poll:
		return nil
	case <-w.stopped:
		return ErrFeedWaitStopped
	case <-ctx.Done():
		return ctx.Err()
	}
}

// StopFeedWaits ends every WaitFeed, now and later, with ErrFeedWaitStopped:
// on shutdown, long-polls answer at once instead of holding the drain.
func (db *DB) StopFeedWaits() {
	db.feed.stopOnce.Do(func() { close(db.feed.stopped) })
}

// WatchFeed listens on FeedChannel until ctx ends, resubscribing after
// connection loss, and wakes feed waiters on every notification. Run one per
// process that serves long-polls or dispatches events.
func (db *DB) WatchFeed(ctx context.Context, log *slog.Logger) {
	for {
		err := db.listenFeed(ctx)
		db.feed.wake(false) // events may have been missed: everyone looks again
		if ctx.Err() != nil {
			return
		}
		log.WarnContext(ctx, "feed waiters poll until Postgres LISTEN is back", "err", err.Error())
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (db *DB) listenFeed(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, db.dsn)
	if err != nil {
		return fmt.Errorf("listen %s: %w", FeedChannel, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+FeedChannel); err != nil {
		return fmt.Errorf("listen %s: %w", FeedChannel, err)
	}
	db.feed.wake(true) // anything numbered before LISTEN took effect is read now
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return fmt.Errorf("listen %s: %w", FeedChannel, err)
		}
		db.feed.wake(true)
	}
}

// FeedListening reports whether this process's LISTEN connection for the
// feed is up.
func (db *DB) FeedListening() bool {
	db.feed.mu.Lock()
	defer db.feed.mu.Unlock()
	return db.feed.live
}
