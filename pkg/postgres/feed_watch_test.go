package postgres_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// TestFeedWatch: a waiter is woken by a NOTIFY on the feed channel from
// another connection, a wake-up that came between taking the generation and
// waiting is not lost, and StopFeedWaits ends every wait for good.
func TestFeedWatch(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	d := testutil.NewDatabase(t)
	watcher, err := postgres.Open(ctx, d.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	go watcher.WatchFeed(wctx, slog.New(slog.DiscardHandler))
	waitFor(t, "feed LISTEN", watcher.FeedListening)

	notify := func() {
		t.Helper()
		if err := d.DB.Gorm().Exec(`SELECT pg_notify(?, '1')`, postgres.FeedChannel).Error; err != nil {
			t.Fatal(err)
		}
	}
	// Woken by a notification: with a wait far longer than the test's
	// deadline, only the NOTIFY can end it.
	gen := watcher.FeedGeneration()
	woke := make(chan error, 1)
	go func() {
		long, cancel := context.WithTimeout(ctx, time.Hour)
		defer cancel()
		woke <- watcher.WaitFeed(long, gen)
	}()
	time.Sleep(50 * time.Millisecond)
	notify()
	select {
	case err := <-woke:
		if err != nil {
			t.Fatalf("wait ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a NOTIFY did not wake the waiter")
	}

	// A notification before the wait: the wait returns at once.
	gen = watcher.FeedGeneration()
	notify()
	waitFor(t, "generation to move", func() bool { return watcher.FeedGeneration() != gen })
	if err := watcher.WaitFeed(ctx, gen); err != nil {
		t.Fatalf("wait after a missed wake-up: %v", err)
	}

	// The context ends a wait with nothing new.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := watcher.WaitFeed(short, watcher.FeedGeneration()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait with nothing new: %v", err)
	}

	// Shutdown: waiting and later waits end at once.
	gen = watcher.FeedGeneration()
	go func() {
		long, cancel := context.WithTimeout(ctx, time.Hour)
		defer cancel()
		woke <- watcher.WaitFeed(long, gen)
	}()
	time.Sleep(50 * time.Millisecond)
	watcher.StopFeedWaits()
	if err := <-woke; !errors.Is(err, postgres.ErrFeedWaitStopped) {
		t.Fatalf("waiting at shutdown: %v", err)
	}
	if err := watcher.WaitFeed(ctx, watcher.FeedGeneration()); !errors.Is(err, postgres.ErrFeedWaitStopped) {
		t.Fatalf("waiting after shutdown: %v", err)
	}
}

// A process without a LISTEN connection still wakes its waiters, by
// polling.
func TestFeedWaitPollsWithoutListen(t *testing.T) {
	t.Parallel()
	d := testutil.NewDatabase(t)
	if d.DB.FeedListening() {
		t.Fatal("listening without WatchFeed")
	}
	start := time.Now()
	if err := d.DB.WaitFeed(t.Context(), d.DB.FeedGeneration()); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < postgres.FeedPollWithoutListen/2 {
		t.Fatalf("returned after %s, before a poll interval", waited)
	}
}
