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
	fairMS  int64
	recount func(context.Context) ([]Held, error)
}

// NewSemaphore returns a semaphore on the sorted set key (used as given:
// callers prefix it) whose slots expire lease after they were last acquired
// or renewed. It panics if lease is shorter than a millisecond.
func NewSemaphore(c goredis.UniversalClient, key string, lease time.Duration) *Semaphore {
	if lease < time.Millisecond {
		panic(fmt.Sprintf("queue: semaphore lease %v is shorter than 1ms", lease))
	}
	return &Semaphore{c: c, key: key, leaseMS: lease.Milliseconds(), fairMS: DefaultFairWindow.Milliseconds()}
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
	return s.WithOwnedRecount(func(ctx context.Context) ([]Held, error) {
		hs, err := recount(ctx)
		held := make([]Held, len(hs))
		for i, h := range hs {
			held[i] = Held{Holder: h}
		}
		return held, err
	})
}

// WithOwnedRecount is WithRecount with each holder's owner, so the
// per-supplier and per-organisation counts are whole again too. It returns s.
func (s *Semaphore) WithOwnedRecount(recount func(context.Context) ([]Held, error)) *Semaphore {
	s.recount = recount
	return s
}

// uncounted is what the acquire scripts answer when the fence's marker is
// missing.
const uncounted = -1

// errNoHolder rejects an empty holder name.
var errNoHolder = errors.New("queue: semaphore holder is empty")

// luaPrelude reads the server clock (ms), purges expired leases and defines
// the helpers every script shares. KEYS = slots, marker, owners, counts,
// active (see keys). Beside the slots (member = holder, score = lease
// expiry), owners maps a holder to its owner's tags ("s:<supplier id>
// o:<organisation id>") and counts holds the live slots per tag; both change
// only in the same script as the slots, so a supplier's or organisation's
// count is exact whatever expires, is released or is recounted. active
// scores each supplier by its latest capped acquire (fair shares). touch()
// keeps the keys' own TTL at their latest lease so an abandoned semaphore
// disappears by itself. Redis >= 5 replicates script effects, so writing
// after TIME is allowed.
const luaPrelude = `
local key = KEYS[1]
local owners, counts, active = KEYS[3], KEYS[4], KEYS[5]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local function count(owner, by)
  for tag in string.gmatch(owner, '%S+') do
    if redis.call('HINCRBY', counts, tag, by) <= 0 then
      redis.call('HDEL', counts, tag)
    end
  end
end
local function forget(holder)
  local owner = redis.call('HGET', owners, holder)
  if owner then
    count(owner, -1)
    redis.call('HDEL', owners, holder)
  end
end
for _, h in ipairs(redis.call('ZRANGEBYSCORE', key, '-inf', now)) do
  forget(h)
end
redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
local function uncounted(capped)
  return capped and ARGV[#ARGV] == '1' and redis.call('EXISTS', KEYS[2]) == 0
end
local function touch()
  local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  if last[2] then
    local at = math.floor(tonumber(last[2])) + 1
    redis.call('PEXPIREAT', key, at)
    redis.call('PEXPIREAT', owners, at)
    redis.call('PEXPIREAT', counts, at)
  end
end
-- take holds the slot (lease expiry) and records its owner once.
local function take(holder, owner, expiry)
  redis.call('ZADD', key, expiry, holder)
  if owner ~= '' and redis.call('HSETNX', owners, holder, owner) == 1 then
    count(owner, 1)
  end
end
-- fits: a new slot for owner under the global cap and the caps of its tags.
local function fits(owner, global, supCap, orgCap)
  if global > 0 and redis.call('ZCARD', key) >= global then
    return false
  end
  for tag in string.gmatch(owner, '%S+') do
    local c = orgCap
    if string.sub(tag, 1, 2) == 's:' then
      c = supCap
    end
    if c > 0 and tonumber(redis.call('HGET', counts, tag) or '0') >= c then
      return false
    end
  end
  return true
end
-- seen marks owner's supplier as having work now and returns how many
-- suppliers had some within the window (ms).
local function seen(owner, window)
  local sup = string.match(owner, 's:%d+')
  if window <= 0 then
    return 1
  end
  redis.call('ZREMRANGEBYSCORE', active, '-inf', now - window)
  if sup then
    redis.call('ZADD', active, now, sup)
    redis.call('PEXPIRE', active, window)
  end
  return math.max(1, redis.call('ZCARD', active))
end
`

// Acquire: ARGV = holder, owner, global cap, supplier cap, organisation
// cap, lease ms, fair window ms, fenced. Returns 1 when the holder holds a
// slot afterwards, 0 when a cap refuses, -1 when fenced and the count was
// lost. A holder already in the set is refreshed whatever the caps (it
// already counts). A cap <= 0 is no cap.
var acquireScript = goredis.NewScript(luaPrelude + `
local holder, owner = ARGV[1], ARGV[2]
local global, supCap, orgCap = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local expiry = now + tonumber(ARGV[6])
local capped = global > 0 or supCap > 0 or orgCap > 0
if uncounted(capped) then
  return -1
end
if capped then
  seen(owner, tonumber(ARGV[7]))
end
if not redis.call('ZSCORE', key, holder) and not fits(owner, global, supCap, orgCap) then
  return 0
end
take(holder, owner, expiry)
touch()
return 1
`)

// AcquireMany: ARGV = owner, global cap, supplier cap, organisation cap,
// lease ms, fair window ms, fair, holders..., fenced. Takes the holders'
// slots in order and stops at the first a cap refuses; returns how many it
// took (-1 as Acquire). One script, so nothing (a FLUSHALL, another
// acquirer) comes between counting a slot and taking the next: the count
// never restarts midway. fair = 1 also stops where the owner's supplier
// would hold more than its fair share of the global cap: the cap divided by
// the suppliers that tried to acquire within the window, rounded up.
var acquireManyScript = goredis.NewScript(luaPrelude + `
local owner = ARGV[1]
local global, supCap, orgCap = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local expiry = now + tonumber(ARGV[5])
local capped = global > 0 or supCap > 0 or orgCap > 0
if uncounted(capped) then
  return -1
end
local sup = string.match(owner, 's:%d+')
if capped then
  local share = math.ceil(global / seen(owner, tonumber(ARGV[6])))
  if ARGV[7] == '1' and global > 0 and sup and (supCap <= 0 or share < supCap) then
    supCap = share
  end
end
local taken = 0
for i = 8, #ARGV - 1 do
  local holder = ARGV[i]
  if not redis.call('ZSCORE', key, holder) and not fits(owner, global, supCap, orgCap) then
    break
  end
  take(holder, owner, expiry)
  taken = taken + 1
end
touch()
return taken
`)

// Recount: ARGV = lease ms, then holder and owner pairs. Holds every listed
// holder's slot (never shortening a lease), recomputes the per-owner counts
// from what is held and sets the marker: the count is whole again.
var recountScript = goredis.NewScript(luaPrelude + `
local expiry = now + tonumber(ARGV[1])
for i = 2, #ARGV, 2 do
  local h, o = ARGV[i], ARGV[i + 1]
  local cur = redis.call('ZSCORE', key, h)
  if not cur or expiry > tonumber(cur) then
    redis.call('ZADD', key, expiry, h)
  end
  if o ~= '' then
    redis.call('HSET', owners, h, o)
  end
end
redis.call('DEL', counts)
for _, h in ipairs(redis.call('HKEYS', owners)) do
  if redis.call('ZSCORE', key, h) then
    count(redis.call('HGET', owners, h), 1)
  else
    redis.call('HDEL', owners, h)
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

// Release: ARGV = holders.
var releaseScript = goredis.NewScript(luaPrelude + `
for i = 1, #ARGV do
  if redis.call('ZREM', key, ARGV[i]) == 1 then
    forget(ARGV[i])
  end
end
return 1
`)

// InUse: count of live slots.
var inUseScript = goredis.NewScript(luaPrelude + `
return redis.call('ZCARD', key)
`)

// Counts: live slots per owner tag, as a flat tag, count list.
var countsScript = goredis.NewScript(luaPrelude + `
return redis.call('HGETALL', counts)
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

// Acquire takes the slot named holder (e.g. "process:1:1") if fewer than
// limit live slots are held; it is AcquireFor with no owner.
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
	return s.AcquireFor(ctx, holder, Owner{}, Caps{Global: limit})
}

// AcquireFor is Acquire under caps for owner: the slot is taken only if the
// global cap, owner's supplier's and owner's organisation's caps all allow
// one more, in one script. The slot is recorded as owner's, so it counts
// against owner's caps until it is released or its lease expires.
func (s *Semaphore) AcquireFor(ctx context.Context, holder string, own Owner, caps Caps) (ok bool, err error) {
	if holder == "" {
		return false, errNoHolder
	}
	n, err := s.fenced(ctx, func() (int, error) {
		return acquireScript.Run(ctx, s.c, s.keys(), holder, own.tags(), caps.Global, caps.Supplier, caps.Organisation,
			s.leaseMS, s.fairMS, s.fence()).Int()
	})
	if err != nil {
		return false, fmt.Errorf("semaphore acquire %s: %w", holder, err)
	}
	return n == 1, nil
}

// keys are the scripts' KEYS: the slots, the fence's marker, the owners,
// the per-owner counts and the suppliers with work, all hashing to the
// slots' Redis Cluster slot (a script's keys must share one): by the slots
// key's own hash tag, or with the whole key as its tag (a key without a tag
// hashes by its whole name).
func (s *Semaphore) keys() []string {
	tag := "{" + s.key + "}"
	if open := strings.IndexByte(s.key, '{'); open >= 0 && strings.IndexByte(s.key[open+1:], '}') > 0 {
		tag = s.key
	}
	return []string{s.key, tag + ":counted", tag + ":owners", tag + ":counts", tag + ":active"}
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
	held, err := s.recount(ctx)
	if err != nil {
		return 0, fmt.Errorf("recount slots: %w", err)
	}
	args := make([]any, 0, 2*len(held)+1)
	args = append(args, s.leaseMS)
	for _, h := range held {
		args = append(args, h.Holder, h.Owner.tags())
	}
	if err := recountScript.Run(ctx, s.c, s.keys(), args...).Err(); err != nil {
		return 0, fmt.Errorf("recount %d slots: %w", len(held), err)
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
	return s.AcquireManyFor(ctx, holders, Owner{}, Caps{Global: limit}, false)
}

// AcquireManyFor is AcquireMany under caps for owner (see AcquireFor).
// fair also keeps owner's supplier within its fair share of the global cap
// (the cap over the suppliers that tried to acquire a slot lately, see
// WithFairWindow), so a bulk job's round leaves room for another supplier's
// per-account creates instead of taking every slot that frees.
func (s *Semaphore) AcquireManyFor(ctx context.Context, holders []string, own Owner, caps Caps, fair bool) (int, error) {
	if len(holders) == 0 {
		return 0, nil
	}
	args := make([]any, 0, len(holders)+8)
	args = append(args, own.tags(), caps.Global, caps.Supplier, caps.Organisation, s.leaseMS, s.fairMS, fair)
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
	n, err := renewScript.Run(ctx, s.c, s.keys(), holder, s.leaseMS).Int()
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
		gone, err := renewManyScript.Run(ctx, s.c, s.keys(), args...).StringSlice()
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
	return s.ReleaseMany(ctx, []string{holder})
}

// ReleaseMany frees the holders' slots (idempotent) in one script call per
// 500: a bulk round gives back hundreds at once, and one call each was 5%
// of the worker's CPU.
func (s *Semaphore) ReleaseMany(ctx context.Context, holders []string) error {
	for len(holders) > 0 {
		n := min(len(holders), renewChunk)
		args := make([]any, n)
		for i, h := range holders[:n] {
			if h == "" {
				return errNoHolder
			}
			args[i] = h
		}
		if err := releaseScript.Run(ctx, s.c, s.keys(), args...).Err(); err != nil {
			return fmt.Errorf("semaphore release %s (%d holders): %w", holders[0], n, err)
		}
		holders = holders[n:]
	}
	return nil
}

// InUse counts live (unexpired) slots, purging expired ones.
func (s *Semaphore) InUse(ctx context.Context) (int, error) {
	n, err := inUseScript.Run(ctx, s.c, s.keys()).Int()
	if err != nil {
		return 0, fmt.Errorf("semaphore in use: %w", err)
	}
	return n, nil
}

// Holders lists live holders, earliest lease expiry first (for
// reconciliation/metrics), purging expired ones.
func (s *Semaphore) Holders(ctx context.Context) ([]string, error) {
	hs, err := holdersScript.Run(ctx, s.c, s.keys()).StringSlice()
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
	ms, err := earliestScript.Run(ctx, s.c, s.keys()).Int64()
	if err != nil {
		return 0, fmt.Errorf("semaphore retry after: %w", err)
	}
	secs := (ms + 999) / 1000
	return int(min(max(secs, minRetryAfter), maxRetryAfter)), nil
}
