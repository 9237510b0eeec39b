// Package redis holds the go-redis client and what the API coordinates
// through Redis: login throttling. Redis is transport and coordination only;
// nothing durable lives here.
package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	goredis "github.com/redis/go-redis/v9"

	"github.com/gridshift/dataimport/pkg/config"
)

// Timeouts of every Redis connection, single server, Sentinel or Cluster.
const (
	dialTimeout = 2 * time.Second
	ioTimeout   = 2 * time.Second
)

// Open parses a redis://host:port/db URL and checks the server answers.
func Open(ctx context.Context, url string) (*goredis.Client, error) {
	opts, err := goredis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis url: %w", err)
	}
	opts.DialTimeout = dialTimeout
	opts.ReadTimeout = ioTimeout
	opts.WriteTimeout = ioTimeout
	c := goredis.NewClient(opts)
	if err := ping(ctx, c); err != nil {
		return nil, err
	}
	return c, nil
}

// Connect is the one place that turns the configured Redis topology into
// connections: the go-redis client (semaphore, notifier, throttle) and the
// asynq connection (queue, worker, inspector), always to the same Redis.
//
//   - REDIS_URL: one server (redis://, rediss://).
//   - REDIS_SENTINEL_ADDRS + REDIS_SENTINEL_MASTER: go-redis NewFailoverClient
//     and asynq.RedisFailoverClientOpt; both ask the sentinels for the
//     current master and follow a failover.
//   - REDIS_CLUSTER_ADDRS: go-redis NewClusterClient and
//     asynq.RedisClusterClientOpt. Every Lua script of queue.Semaphore touches
//     exactly one key (KEYS[1]), so each runs on the node owning that slot;
//     asynq hash-tags its own keys per queue. The login throttle
//     (redis_rate) is one key per script too.
//
// The client has answered a PING when Connect returns.
func Connect(ctx context.Context, cfg config.Config) (goredis.UniversalClient, asynq.RedisConnOpt, error) {
	var (
		c   goredis.UniversalClient
		opt asynq.RedisConnOpt
	)
	switch cfg.RedisTopology() {
	case config.RedisSentinel:
		if len(cfg.RedisClusterAddrs) > 0 {
			return nil, nil, errors.New("redis: both REDIS_SENTINEL_ADDRS and REDIS_CLUSTER_ADDRS are set; choose one")
		}
		if cfg.RedisSentinelMaster == "" {
			return nil, nil, errors.New("redis: REDIS_SENTINEL_ADDRS needs REDIS_SENTINEL_MASTER")
		}
		c = goredis.NewFailoverClient(&goredis.FailoverOptions{
			MasterName: cfg.RedisSentinelMaster, SentinelAddrs: cfg.RedisSentinelAddrs,
			SentinelPassword: cfg.RedisSentinelPassword, Password: cfg.RedisPassword,
			DialTimeout: dialTimeout, ReadTimeout: ioTimeout, WriteTimeout: ioTimeout,
		})
		opt = asynq.RedisFailoverClientOpt{
			MasterName: cfg.RedisSentinelMaster, SentinelAddrs: cfg.RedisSentinelAddrs,
			SentinelPassword: cfg.RedisSentinelPassword, Password: cfg.RedisPassword,
			DialTimeout: dialTimeout, ReadTimeout: ioTimeout, WriteTimeout: ioTimeout,
		}
	case config.RedisCluster:
		c = goredis.NewClusterClient(&goredis.ClusterOptions{
			Addrs: cfg.RedisClusterAddrs, Password: cfg.RedisPassword,
			DialTimeout: dialTimeout, ReadTimeout: ioTimeout, WriteTimeout: ioTimeout,
		})
		opt = asynq.RedisClusterClientOpt{
			Addrs: cfg.RedisClusterAddrs, Password: cfg.RedisPassword,
			DialTimeout: dialTimeout, ReadTimeout: ioTimeout, WriteTimeout: ioTimeout,
		}
	default:
		var err error
		if opt, err = asynq.ParseRedisURI(cfg.RedisURL); err != nil {
			return nil, nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		single, err := Open(ctx, cfg.RedisURL)
		if err != nil {
			return nil, nil, err
		}
		return single, opt, nil
	}
	if err := ping(ctx, c); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", cfg.RedisTopology(), err)
	}
	return c, opt, nil
}

// ping checks the server answers within 5 s, closing c if not.
func ping(ctx context.Context, c goredis.UniversalClient) error {
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		_ = c.Close()
		return fmt.Errorf("ping redis: %w", err)
	}
	return nil
}

// Pinger adapts a client to the readiness check.
type Pinger struct{ Client goredis.UniversalClient }

// Ping checks the server answers.
func (p Pinger) Ping(ctx context.Context) error { return p.Client.Ping(ctx).Err() }
