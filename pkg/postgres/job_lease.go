package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Which worker processes a job: its lease, and the jobs no live worker holds.

// ClaimJob takes (or renews) the job's processing lease for owner; false
// when the job is not PROCESSING or another live worker holds it.
func (db *DB) ClaimJob(ctx context.Context, jobID int64, owner string, lease time.Duration) (dataimport.Job, bool, error) {
	var id int64
	err := db.sql.QueryRowContext(ctx, `UPDATE import_jobs SET lease_owner = $2, lease_until = now() + $3::interval
		WHERE id = $1 AND state = 'PROCESSING' AND (lease_owner IS NULL OR lease_owner = $2 OR lease_until < now())
		RETURNING id`, jobID, owner, lease.String()).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return dataimport.Job{}, false, nil
	}
	if err != nil {
		return dataimport.Job{}, false, fmt.Errorf("claim job %d: %w", jobID, err)
	}
	row := db.sql.QueryRowContext(ctx, `SELECT `+jobColumns+` FROM import_jobs j JOIN import_suppliers s ON s.id = j.supplier_id WHERE j.id = $1`, jobID)
	j, err := scanJob(row, nil)
	if err != nil {
		return dataimport.Job{}, false, fmt.Errorf("claim job %d: %w", jobID, err)
	}
	return j, true, nil
}

// YieldJob gives the lease up so another task continues the job, and
// returns the epoch that names that task.
func (db *DB) YieldJob(ctx context.Context, jobID int64, owner string) (int, error) {
	var epoch int
	err := db.sql.QueryRowContext(ctx, `UPDATE import_jobs SET lease_owner = NULL, lease_until = NULL, lease_epoch = lease_epoch + 1
		WHERE id = $1 AND lease_owner = $2 RETURNING lease_epoch`, jobID, owner).Scan(&epoch)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("yield job %d: %w", jobID, err)
	}
	return epoch, nil
}

// JobToWake is a PROCESSING job no live worker holds, and the epoch that
// names its wake-up task.
type JobToWake struct {
	ID    int64
	Epoch int
}

// JobsToWake lists PROCESSING jobs nobody holds: never started (their task
// may be queued, or lost with Redis) or whose lease ran out (their worker
// died). A lapsed lease is cleared and the epoch bumped, so the new task
// has a new ID even though asynq may still hold the dead worker's.
func (db *DB) JobsToWake(ctx context.Context) ([]JobToWake, error) {
	// Only lapsed leases are written; jobs nobody holds are only read.
	rows, err := db.sql.QueryContext(ctx, `
		WITH lapsed AS (
			UPDATE import_jobs SET lease_epoch = lease_epoch + 1, lease_owner = NULL, lease_until = NULL
			 WHERE state = 'PROCESSING' AND lease_until < now()
			RETURNING id, lease_epoch
		)
		SELECT id, lease_epoch FROM lapsed
		UNION ALL
		SELECT id, lease_epoch FROM import_jobs WHERE state = 'PROCESSING' AND lease_until IS NULL`)
	if err != nil {
		return nil, fmt.Errorf("jobs to wake: %w", err)
	}
	defer rows.Close()
	var out []JobToWake
	for rows.Next() {
		var j JobToWake
		if err := rows.Scan(&j.ID, &j.Epoch); err != nil {
			return nil, fmt.Errorf("jobs to wake: %w", err)
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// rateSampled is a job row's rate_samples with a (now, lines done) sample
// added and those older than a minute dropped.
const rateSampled = `(
			SELECT coalesce(jsonb_agg(s ORDER BY (s->>'t')::float8), '[]'::jsonb) FROM (
				SELECT s FROM jsonb_array_elements(rate_samples) s WHERE (s->>'t')::float8 > extract(epoch FROM now()) - 62
				UNION ALL
				SELECT jsonb_build_object('t', extract(epoch FROM now()),
				       'd', n_received - n_pending - n_in_progress - CASE WHEN create_accounts AND NOT dry_run THEN n_staged ELSE 0 END)) x)`

// SampleJobRate adds a (now, lines done) sample to the job's last minute.
// A job that is not processing keeps its samples: its last one is taken
// as it finishes (FinishJobIfDone), so a finished job's view is final.
func (db *DB) SampleJobRate(ctx context.Context, jobID int64) error {
	_, err := db.sql.ExecContext(ctx, `UPDATE import_jobs SET rate_samples = `+rateSampled+`
		 WHERE id = $1 AND state = 'PROCESSING'`, jobID)
	if err != nil {
		return fmt.Errorf("sample job %d rate: %w", jobID, err)
	}
	return nil
}
