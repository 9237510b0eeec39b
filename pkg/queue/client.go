package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/hibiken/asynq"
)

// Client enqueues tasks.
type Client struct{ c *asynq.Client }

// NewClient wraps an asynq client for the Redis at opt.
func NewClient(opt asynq.RedisConnOpt) *Client { return &Client{c: asynq.NewClient(opt)} }

// Close releases the connection.
func (c *Client) Close() error { return c.c.Close() }

// Tasker is a typed payload that knows its asynq task.
type Tasker interface {
	Task() (*asynq.Task, error)
}

// Enqueue adds the task. A task whose ID is already queued or running counts
// as enqueued: that is the dedupe doing its job.
func (c *Client) Enqueue(ctx context.Context, p Tasker) error {
	t, err := p.Task()
	if err != nil {
		return err
	}
	if _, err := c.c.EnqueueContext(ctx, t); err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("enqueue %s: %w", t.Type(), err)
	}
	return nil
}
