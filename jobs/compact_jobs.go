package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/gridshift/dataimport/pkg/postgres"
)

// JobCompactionStore compacts completed bulk jobs (pkg/postgres/job_compact.go).
type JobCompactionStore interface {
	JobsToCompact(ctx context.Context, after time.Duration, limit int) ([]int64, error)
	CompactJobBatch(ctx context.Context, jobID, after int64, limit int) (postgres.JobCompaction, error)
}

// JobCompactor drops what a COMPLETED bulk job no longer needs (the raw
// text of its created lines, the staged versions of its accounts), so a
// finished job keeps a fraction of the bytes it wrote. Every worker runs
// one. Each batch is one short transaction of at most Batch lines that
// re-checks, under the job's lock, that the job is still COMPLETED: a
// re-run or retry reopening it stops the compaction, and the job is
// compacted again once it completes again. Batches are idempotent, so two
// workers on one job only repeat each other's work.
type JobCompactor struct {
	Store JobCompactionStore
	Log   *slog.Logger
	Every time.Duration // pause between passes
	After time.Duration // how long a job stays whole once COMPLETED
	Batch int           // lines per transaction; default 500
	// Pause between batches, so a large job's compaction leaves the
	// database to the imports under way.
	Pause time.Duration
}

// CompactPause spaces a completed job's compaction batches in the worker
// (500 lines each, some milliseconds): imports under way keep the database.
// make bench-scale compacts with the same pause.
const CompactPause = 20 * time.Millisecond

// Run compacts at once, then every Every, until ctx ends; never when Every
// is 0 (JOB_COMPACT_EVERY=0 turns compaction off).
func (c *JobCompactor) Run(ctx context.Context) {
	if c.Every <= 0 {
		return
	}
	t := time.NewTicker(c.Every)
	defer t.Stop()
	for {
		if _, err := c.Once(ctx); err != nil && ctx.Err() == nil {
			c.Log.WarnContext(ctx, "compacting completed jobs failed", "err", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Once does one pass: every job waiting for compaction, oldest first, a
// batch at a time from its first line to its last. It answers how many
// jobs it finished compacting.
func (c *JobCompactor) Once(ctx context.Context) (int, error) {
	batch := c.Batch
	if batch <= 0 {
		batch = 500
	}
	ids, err := c.Store.JobsToCompact(ctx, c.After, 100)
	if err != nil {
		return 0, err
	}
	done := 0
	for _, id := range ids {
		var after, lines, accounts int64
		for ctx.Err() == nil {
			r, err := c.Store.CompactJobBatch(ctx, id, after, batch)
			if err != nil {
				return done, err
			}
			lines, accounts, after = lines+r.Lines, accounts+r.Processes, r.Next
			if r.Stopped {
				c.Log.InfoContext(ctx, "job compaction stopped: the job is no longer completed", "job_id", id)
				break
			}
			if r.Done {
				done++
				c.Log.InfoContext(ctx, "compacted completed job", "job_id", id, "lines", lines, "accounts", accounts)
				break
			}
			if c.Pause > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(c.Pause):
				}
			}
		}
	}
	return done, ctx.Err()
}
