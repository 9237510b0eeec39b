package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// UploadSlots bounds an organisation's bulk uploads in flight across every
// API replica (MAX_UPLOADS_PER_ORG). Each upload holds a leased slot: a
// member of the organisation's sorted set scored with its expiry (Redis
// time, so replicas' clocks do not matter). The upload renews its lease
// while it runs and removes it when it ends; the slot of a replica that
// died expires on its own after one lease.
type UploadSlots struct {
	c      goredis.UniversalClient
	prefix string
	lease  time.Duration
}

// NewUploadSlots keeps slots under prefix+organisation, leased for lease.
func NewUploadSlots(c goredis.UniversalClient, prefix string, lease time.Duration) *UploadSlots {
	return &UploadSlots{c: c, prefix: prefix, lease: lease}
}

// Expired slots are dropped first, so a dead holder never counts.
var acquireSlot = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`)

// Only a slot still held is renewed: one that expired may have been given
// to another upload meanwhile.
var renewSlot = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[1]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return n`)

// Acquire takes one of max slots of org. ok is false when all are held.
// The slot is renewed every third of a lease until release is called (or
// ctx ends); release frees it at once.
func (s *UploadSlots) Acquire(ctx context.Context, org int64, max int) (release func(), ok bool, err error) {
	key := s.prefix + strconv.FormatInt(org, 10)
	var b [12]byte
	_, _ = rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	ms := s.lease.Milliseconds()
	got, err := acquireSlot.Run(ctx, s.c, []string{key}, max, ms, token).Int()
	if err != nil {
		return nil, false, fmt.Errorf("upload slot: %w", err)
	}
	if got == 0 {
		return nil, false, nil
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(s.lease / 3)
		defer t.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-t.C:
				_ = renewSlot.Run(rctx, s.c, []string{key}, ms, token).Err()
			}
		}
	}()
	return func() {
		stop()
		<-done
		rm, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = s.c.ZRem(rm, key, token).Err()
	}, true, nil
}
