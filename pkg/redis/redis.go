// Package redis holds the go-redis client and what the API coordinates
// through Redis: login throttling. Redis is transport and coordination only;
// nothing durable lives here.
package redis

import (
	"context"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Open parses a redis://host:port/db URL and checks the server answers.
func Open(ctx context.Context, url string) (*goredis.Client, error) {
	opts, err := goredis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis url: %w", err)
	}
	opts.DialTimeout = 2 * time.Second
	opts.ReadTimeout = 2 * time.Second
	opts.WriteTimeout = 2 * time.Second
	c := goredis.NewClient(opts)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Ping(pctx).Err(); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("ping redis: %w", err)
	}
	return c, nil
}

// Pinger adapts a client to the readiness check.
type Pinger struct{ Client *goredis.Client }

// Ping checks the server answers.
func (p Pinger) Ping(ctx context.Context) error { return p.Client.Ping(ctx).Err() }
