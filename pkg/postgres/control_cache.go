package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// The control plane (API keys, grants, suppliers, teams, settings) is read on
// every partner request but changes a few times a day, so API processes keep
// it in memory. Correctness rests on Postgres, not on timing:
//
//   - migration 00005 NOTIFYs dataimport_control after any change to those
//     tables, and WatchControl empties the cache when it hears one, so a
//     revocation, a paused supplier or a new limit reaches every API process
//     within milliseconds;
//   - the cache is used only while the LISTEN connection is up: before it is
//     subscribed, or after it breaks, every read goes to Postgres;
//   - writes made through this DB empty it at once (read-your-writes here);
//   - a generation counter stops a read that raced an invalidation from
//     caching what it read, and a TTL bounds the age of any entry.
const (
	controlChannel = "dataimport_control"
	controlTTL     = 30 * time.Second
)

type controlEntry struct {
	v     any
	until time.Time
}

type controlCache struct {
	mu      sync.RWMutex
	live    bool   // subscribed to controlChannel
	gen     uint64 // bumped by every invalidation
	entries map[string]controlEntry
}

func (c *controlCache) get(key string) (any, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.entries[key]
	if !ok || !c.live || time.Now().After(e.until) {
		return nil, false
	}
	return e.v, true
}

func (c *controlCache) generation() (uint64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.gen, c.live
}

func (c *controlCache) put(gen uint64, key string, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live && c.gen == gen {
		c.entries[key] = controlEntry{v: v, until: time.Now().Add(controlTTL)}
	}
}

// reset empties the cache; live says whether it may fill again.
func (c *controlCache) reset(live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = live
	c.clearLocked()
}

// invalidate empties the cache and leaves it live or not as it was.
func (c *controlCache) invalidate() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.clearLocked()
}

func (c *controlCache) clearLocked() {
	c.gen++
	c.entries = map[string]controlEntry{}
}

// cachedControl returns the cached value for key, or loads it (and caches
// a successful load while the cache is live).
func cachedControl[V any](db *DB, key string, load func() (V, error)) (V, error) {
	if v, ok := db.control.get(key); ok {
		return v.(V), nil
	}
	gen, live := db.control.generation()
	v, err := load()
	if err == nil && live {
		db.control.put(gen, key, v)
	}
	return v, err
}

// WatchControl keeps the control-plane cache in step with Postgres until ctx
// ends, resubscribing after connection loss. Only processes that run it
// cache anything.
func (db *DB) WatchControl(ctx context.Context, log *slog.Logger) {
	for {
		err := db.listenControl(ctx)
		db.control.reset(false)
		if ctx.Err() != nil {
			return
		}
		log.WarnContext(ctx, "control-plane cache off until Postgres LISTEN is back", "err", err.Error())
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

func (db *DB) listenControl(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, db.dsn)
	if err != nil {
		return fmt.Errorf("listen %s: %w", controlChannel, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+controlChannel); err != nil {
		return fmt.Errorf("listen %s: %w", controlChannel, err)
	}
	db.control.reset(true)
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return fmt.Errorf("listen %s: %w", controlChannel, err)
		}
		db.control.invalidate()
	}
}

// ControlCacheLive reports whether control-plane reads are being cached
// (the LISTEN connection is up).
func (db *DB) ControlCacheLive() bool {
	_, live := db.control.generation()
	return live
}
