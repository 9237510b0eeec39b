package postgres

import (
	"context"
	"fmt"
)

// AwaitingCreation lists up to limit started per-account attempts (v1, v2
// once started, retries) whose accounts are not created yet, newest first,
// leaving out the processes in skip. A bulk job's attempts are never listed
// (import_processes.job_attempt, migration 00034), nor dry runs: a dry
// run's transaction is rolled back and cannot carry others.
//
// A creation task takes the newest because asynq hands out the oldest: what
// it lists is least likely to be running in another worker right now.
func (db *DB) AwaitingCreation(ctx context.Context, skip []int64, limit int) ([]int64, error) {
	if skip == nil {
		skip = []int64{}
	}
	ids, err := queryIDs(ctx, db.sql, `
		SELECT id FROM import_processes
		 WHERE v2_status = 'IN_PROGRESS' AND NOT job_attempt AND NOT dry_run AND id <> ALL($1::bigint[])
		 ORDER BY modified_at DESC LIMIT $2`, skip, limit)
	if err != nil {
		return nil, fmt.Errorf("attempts awaiting creation: %w", err)
	}
	return ids, nil
}
