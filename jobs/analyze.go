package jobs

import (
	"context"
	"log/slog"
	"time"
)

// StatisticsStore refreshes the planner's statistics of grown tables.
type StatisticsStore interface {
	AnalyzeGrownTables(ctx context.Context) ([]string, error)
}

// StatisticsKeeper keeps the planner's statistics current while a migration
// grows the tables, whatever the database's autovacuum settings (see
// postgres.DB.AnalyzeGrownTables). Every worker runs one; a table another
// worker has just analyzed no longer qualifies.
type StatisticsKeeper struct {
	Store StatisticsStore
	Log   *slog.Logger
	Every time.Duration // pause between passes
}

// Run looks at once, then every Every, until ctx ends.
func (k *StatisticsKeeper) Run(ctx context.Context) {
	t := time.NewTicker(k.Every)
	defer t.Stop()
	for {
		if names, err := k.Store.AnalyzeGrownTables(ctx); err != nil && ctx.Err() == nil {
			k.Log.WarnContext(ctx, "analyzing grown tables failed", "err", err.Error())
		} else if len(names) > 0 {
			k.Log.InfoContext(ctx, "analyzed grown tables", "tables", names)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
