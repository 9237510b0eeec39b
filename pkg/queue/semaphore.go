// Package queue holds what the API and the workers coordinate through Redis
// around import jobs: the cluster-wide concurrency limit on accounts in
// progress.
package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Bounds of RetryAfter, in seconds.
const (
	minRetryAfter = 1
	maxRetryAfter = 30
)

// Semaphore is a cluster-wide counting semaphore in Redis with leased slots.
//
// All slots live in one sorted set: member = holder, score = lease expiry in
// milliseconds of Redis server time. Every operation is a single Lua script
// that first purges expired leases, so check-and-take is atomic under any
// concurrency and the clocks of API and worker machines never matter. A
// holder that crashes without releasing loses its slot when its lease runs
// out; nothing leaks.
//
// The limit is not stored here: callers pass the current value to Acquire,
// so a change applies at once on every replica. A Semaphore is safe for
// concurrent use.
type Semaphore struct {
	c       goredis.UniversalClient
	key     string
	leaseMS int64
	recount func(context.Context) ([]string, error)
}

// NewSemaphore returns a semaphore on the sorted set key (used as given:
// callers prefix it) whose slots expire lease after they were last acquired
// or renewed. It panics if lease is shorter than a millisecond.
func NewSemaphore(c goredis.UniversalClient, key string, lease time.Duration) *Semaphore {
	if lease < time.Millisecond {
		panic(fmt.Sprintf("queue: semaphore lease %v is shorter than 1ms", lease))
	}
	return &Semaphore{c: c, key: key, leaseMS: lease.Milliseconds()}
}

// WithRecount fences the count against a Redis that lost it. Redis keeps a
// marker beside the slots; after a FLUSHALL, a restart without persistence
// or a failover to a replica that missed writes, the marker is gone with
// the slots, and a capped acquire, instead of counting from zero (granting
// a whole cap more while the accounts already in progress keep running),
// first takes again the slots of every holder recount names (the attempts
// in progress, from Postgres), sets the marker and only then counts. It
// returns s.
func (s *Semaphore) WithRecount(recount func(context.Context) ([]string, error)) *Semaphore {
	s.recount = recount
	return s
}

// uncounted is what the acquire scripts answer when the fence's marker is
// missing.
const uncounted = -1

// errNoHolder rejects an empty holder name.
var errNoHolder = errors.New("queue: semaphore holder is empty")

// luaPrelude reads the server clock (ms), purges expired leases and defines
// touch(), which keeps the key's own TTL at its latest lease so an abandoned
// key disappears by itself. Redis >= 5 replicates script effects, so writing
// after TIME is allowed.
const luaPrelude = `
local key = KEYS[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
local function uncounted(limit)
  return limit > 0 and ARGV[#ARGV] == '1' and redis.call('EXISTS', KEYS[2]) == 0
end
local function touch()
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if last[2] then
    redis.call('PEXPIREAT', key, math.floor(tonumber(last[2])) + 1)
  end
end
`

// Acquire: KEYS = slots, marker; ARGV = holder, limit, lease ms, fenced.
// Returns 1 when the holder holds a slot afterwards, 0 when full, -1 when
// fenced and the count was lost. A holder already in the set is refreshed
// whatever the limit (it already counts). limit <= 0 means no limit.
var acquireScript = goredis.NewScript(luaPrelude + `
local holder = ARGV[1]
local limit = tonumber(ARGV[2])
local expiry = now + tonumber(ARGV[3])
if uncounted(limit) then
  return -1
end
if not redis.call('ZSCORE', key, holder) then
  if limit > 0 and redis.call('ZCARD', key) >= limit then
    return 0
  end
end
redis.call('ZADD', key, expiry, holder)
touch()
return 1
`)

// AcquireMany: KEYS = slots, marker; ARGV = limit, lease ms, holders...,
// fenced. Takes the holders' slots in order and stops at the first the
// limit refuses; returns how many it took (-1 as Acquire). One script, so
// nothing (a FLUSHALL, another acquirer) comes between counting a slot and
// taking the next: the count never restarts midway.
var acquireManyScript = goredis.NewScript(luaPrelude + `
local limit = tonumber(ARGV[1])
local expiry = now + tonumber(ARGV[2])
if uncounted(limit) then
  return -1
end
local taken = 0
for i = 3, #ARGV - 1 do
  local holder = ARGV[i]
  if not redis.call('ZSCORE', key, holder) then
    if limit > 0 and redis.call('ZCARD', key) >= limit then
      break
    end
  end
  redis.call('ZADD', key, expiry, holder)
  taken = taken + 1
end
touch()
return taken
`)

// Recount: KEYS = slots, marker; ARGV = lease ms, holders... Holds every
// listed holder's slot (never shortening a lease) and sets the marker: the
// count is whole again.
var recountScript = goredis.NewScript(luaPrelude + `
local expiry = now + tonumber(ARGV[1])
for i = 2, #ARGV do
  local cur = redis.call('ZSCORE', key, ARGV[i])
  if not cur or expiry > tonumber(cur) then
    redis.call('ZADD', key, expiry, ARGV[i])
  end
end
redis.call('SET', KEYS[2], '1')
touch()
return 1
`)

// Renew: ARGV = holder, lease ms. Returns 1 when the holder still held a
// live slot (its expiry is pushed to at least now+lease), else 0.
var renewScript = goredis.NewScript(luaPrelude + `
local holder = ARGV[1]
local cur = redis.call('ZSCORE', key, holder)
if not cur then
  return 0
end
local expiry = now + tonumber(ARGV[2])
if expiry > tonumber(cur) then
  redis.call('ZADD', key, 'XX', expiry, holder)
  touch()
end
return 1
`)

// RenewMany: ARGV = lease ms, holders... Renews every listed holder that
// still holds a live slot and returns those that did not.
var renewManyScript = goredis.NewScript(luaPrelude + `
local expiry = now + tonumber(ARGV[1])
local missing = {}
for i = 2, #ARGV do
  local cur = redis.call('ZSCORE', key, ARGV[i])
  if not cur then
    missing[#missing + 1] = ARGV[i]
  elseif expiry > tonumber(cur) then
    redis.call('ZADD', key, 'XX', expiry, ARGV[i])
  end
end
touch()
return missing
`)

// Release: ARGV = holder.
var releaseScript = goredis.NewScript(`
redis.call('ZREM', KEYS[1], ARGV[1])
return 1
`)

// InUse: count of live slots.
var inUseScript = goredis.NewScript(luaPrelude + `
return redis.call('ZCARD', key)
`)

// Holders: live holders, earliest expiry first.
var holdersScript = goredis.NewScript(luaPrelude + `
return redis.call('ZRANGE', key, 0, -1)
`)

// RetryAfter: ms until the earliest live lease expires, -1 when none is held.
var earliestScript = goredis.NewScript(luaPrelude + `
local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
if not first[2] then
  return -1
end
return math.floor(tonumber(first[2])) - now
`)

// Acquire takes the slot named holder (e.g. "DEMO_ENERGY/EXT-1") if fewer
// than limit live slots are held.
//
// Idempotent per holder: acquiring a slot the same holder already holds
// succeeds and refreshes its lease, even if the limit has meanwhile dropped
// below the number of slots in use (a second create request for the same
// account must not take a second slot, nor be refused for one it has).
//
// Returns ok=false when full. Expired leases are purged atomically before
// counting. A limit <= 0 means no limit: the slot is still taken and counted,
// so switching the limit on later counts accounts already in progress.
func (s *Semaphore) Acquire(ctx context.Context, holder string, limit int) (ok bool, err error) {
	if holder == "" {
		return false, errNoHolder
	}
	n, err := s.fenced(ctx, func() (int, error) {
		return acquireScript.Run(ctx, s.c, s.keys(), holder, limit, s.leaseMS, s.fence()).Int()
	})
	if err != nil {
		return false, fmt.Errorf("semaphore acquire %s: %w", holder, err)
	}
	return n == 1, nil
}

// keys are the scripts' KEYS: the slots and the fence's marker, which
// hashes to the slots' Redis Cluster slot (a script's keys must share one):
// by the slots key's own hash tag, or with the whole key as its tag (a key
// without a tag hashes by its whole name).
func (s *Semaphore) keys() []string {
	if open := strings.IndexByte(s.key, '{'); open >= 0 && strings.IndexByte(s.key[open+1:], '}') > 0 {
		return []string{s.key, s.key + ":counted"}
	}
	return []string{s.key, "{" + s.key + "}:counted"}
}

// fence is the scripts' last argument: whether a lost count is recounted.
func (s *Semaphore) fence() string {
	if s.recount == nil {
		return "0"
	}
	return "1"
}

// fenced runs an acquire script; if it finds the count lost, the slots of
// the attempts in progress are taken again first and it runs once more (a
// second loss at once answers "full": the caller retries later).
func (s *Semaphore) fenced(ctx context.Context, run func() (int, error)) (int, error) {
	n, err := run()
	if err != nil || n != uncounted {
		return n, err
	}
	holders, err := s.recount(ctx)
	if err != nil {
		return 0, fmt.Errorf("recount slots: %w", err)
	}
	args := make([]any, 0, len(holders)+1)
	args = append(args, s.leaseMS)
	for _, h := range holders {
		args = append(args, h)
	}
	if err := recountScript.Run(ctx, s.c, s.keys(), args...).Err(); err != nil {
		return 0, fmt.Errorf("recount %d slots: %w", len(holders), err)
	}
	if n, err = run(); n == uncounted {
		n = 0
	}
	return n, err
}

// AcquireMany is Acquire for a batch, atomically: it takes the holders'
// slots in order until the limit refuses one and returns how many it took
// (holders[:n] hold slots). Taken one by one, a Redis that lost its slots
// midway (FLUSHALL, failover) would count the batch from zero again and
// grant more than the limit. Callers bound the batch (a bulk job's round).
func (s *Semaphore) AcquireMany(ctx context.Context, holders []string, limit int) (int, error) {
	if len(holders) == 0 {
		return 0, nil
	}
	args := make([]any, 0, len(holders)+3)
	args = append(args, limit, s.leaseMS)
	for _, h := range holders {
		if h == "" {
			return 0, errNoHolder
		}
		args = append(args, h)
	}
	args = append(args, s.fence())
	n, err := s.fenced(ctx, func() (int, error) {
		return acquireManyScript.Run(ctx, s.c, s.keys(), args...).Int()
	})
	if err != nil {
		return 0, fmt.Errorf("semaphore acquire %d holders: %w", len(holders), err)
	}
	return n, nil
}

// Renew extends the holder's lease to lease from now (never shortens it);
// returns false if the holder no longer holds a slot (released, or its lease
// already expired — the slot may have gone to someone else).
func (s *Semaphore) Renew(ctx context.Context, holder string) (bool, error) {
	if holder == "" {
		return false, errNoHolder
	}
	n, err := renewScript.Run(ctx, s.c, []string{s.key}, holder, s.leaseMS).Int()
	if err != nil {
		return false, fmt.Errorf("semaphore renew %s: %w", holder, err)
	}
	return n == 1, nil
}

// renewChunk bounds one RenewMany script call, so a long list never blocks
// Redis for long.
const renewChunk = 500

// RenewMany is Renew for many holders in few round trips; it returns the
// holders that no longer held a slot (not renewed).
func (s *Semaphore) RenewMany(ctx context.Context, holders []string) (missing []string, err error) {
	for len(holders) > 0 {
		n := min(len(holders), renewChunk)
		args := make([]any, 0, n+1)
		args = append(args, s.leaseMS)
		for _, h := range holders[:n] {
			if h == "" {
				return missing, errNoHolder
			}
			args = append(args, h)
		}
		gone, err := renewManyScript.Run(ctx, s.c, []string{s.key}, args...).StringSlice()
		if err != nil {
			return missing, fmt.Errorf("semaphore renew %d holders: %w", n, err)
		}
		missing = append(missing, gone...)
		holders = holders[n:]
	}
	return missing, nil
}

// Release frees the holder's slot (idempotent).
func (s *Semaphore) Release(ctx context.Context, holder string) error {
	if holder == "" {
		return errNoHolder
	}
	if err := releaseScript.Run(ctx, s.c, []string{s.key}, holder).Err(); err != nil {
		return fmt.Errorf("semaphore release %s: %w", holder, err)
	}
	return nil
}

// InUse counts live (unexpired) slots, purging expired ones.
func (s *Semaphore) InUse(ctx context.Context) (int, error) {
	n, err := inUseScript.Run(ctx, s.c, []string{s.key}).Int()
	if err != nil {
		return 0, fmt.Errorf("semaphore in use: %w", err)
	}
	return n, nil
}

// Holders lists live holders, earliest lease expiry first (for
// reconciliation/metrics), purging expired ones.
func (s *Semaphore) Holders(ctx context.Context) ([]string, error) {
	hs, err := holdersScript.Run(ctx, s.c, []string{s.key}).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("semaphore holders: %w", err)
	}
	return hs, nil
}

// RetryAfter estimates seconds until a slot may free up: time to the earliest
// lease expiry, rounded up and clamped to [1, 30]. With no slot held it
// returns 1. Slots released early free up sooner; this is an upper bound for
// the lease-expiry path only, meant for a Retry-After header.
func (s *Semaphore) RetryAfter(ctx context.Context) (int, error) {
	ms, err := earliestScript.Run(ctx, s.c, []string{s.key}).Int64()
	if err != nil {
		return 0, fmt.Errorf("semaphore retry after: %w", err)
	}
	secs := (ms + 999) / 1000
	return int(min(max(secs, minRetryAfter), maxRetryAfter)), nil
}
