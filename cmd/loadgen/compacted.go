package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gridshift/dataimport/jobs"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// compactedTables are the tables the compaction of a completed job writes
// (pkg/postgres/job_compact.go): the lines lose their text, the staged
// versions are deleted, the processes keep the staged figures, the job is
// marked compacted. The rows it replaced or deleted stay in their files as
// dead rows until a vacuum; VACUUM FULL of these tables (and their TOAST)
// is what the compacted measure rewrites. TestCompactedTablesAreWhatCompactionWrites
// holds this list to job_compact.go's statements.
var compactedTables = []string{"import_job_records", "import_process_versions", "import_processes", "import_jobs"}

// compactedResult is the bookkeeping measured again once the jobs are
// compacted.
type compactedResult struct {
	Jobs int `json:"jobs"`
	// Jobs the worker had compacted by itself (JOB_COMPACT_AFTER after
	// each completed) when the first bookkeeping figure was taken, and
	// jobs compacted once the compacted measure was taken.
	CompactedAtCompletion int `json:"compacted_at_completion"`
	Compacted             int `json:"compacted"`
	// The compactor's pass over the jobs not compacted yet (jobs.JobCompactor,
	// run by loadgen) and the VACUUM FULL of compactedTables, in seconds.
	CompactSeconds float64 `json:"compact_seconds"`
	VacuumSeconds  float64 `json:"vacuum_seconds"`
	// Transactions of the database older than the compaction still open
	// when the tables were rewritten (after waiting up to a minute): VACUUM
	// FULL keeps the rows they may see, so the figure counts dead rows.
	OlderTransactions int               `json:"older_transactions"`
	Bookkeeping       bookkeepingResult `json:"bookkeeping"`
}

// jobsCompacted answers the jobs of the database and how many of them are
// compacted since they last completed.
func jobsCompacted(ctx context.Context, dbURL string) (jobs, compacted int, err error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, 0, fmt.Errorf("compacted jobs: %w", err)
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE compacted_at >= finished_at) FROM import_jobs`).Scan(&jobs, &compacted)
	if err != nil {
		return 0, 0, fmt.Errorf("compacted jobs: %w", err)
	}
	return jobs, compacted, nil
}

// measureCompacted compacts the completed jobs the worker has not compacted
// yet, with the worker's own compactor (jobs.JobCompactor: batches of 500
// lines, jobs.CompactPause apart) rather than waiting JOB_COMPACT_AFTER,
// then rewrites the tables the compaction wrote (VACUUM FULL, once no
// transaction of the database older than the compaction runs) and
// measures every table as the first figure was: growth since tablesBefore
// after a CHECKPOINT.
func measureCompacted(ctx context.Context, dbURL string, tablesBefore map[string]int64, accounts int) (*compactedResult, error) {
	db, err := postgres.Open(ctx, dbURL)
	if err != nil {
		return nil, fmt.Errorf("compaction: %w", err)
	}
	defer db.Close()
	res := &compactedResult{}
	t0 := time.Now()
	c := &jobs.JobCompactor{Store: db, Log: slog.New(slog.NewTextHandler(os.Stderr, nil)), Pause: jobs.CompactPause}
	for {
		// Once takes at most 100 jobs a pass.
		left, err := db.JobsToCompact(ctx, 0, 1)
		if err != nil {
			return nil, fmt.Errorf("compaction: %w", err)
		}
		if len(left) == 0 {
			break
		}
		if n, err := c.Once(ctx); err != nil {
			return nil, fmt.Errorf("compaction: %w", err)
		} else if n == 0 {
			// A job stopped (no longer COMPLETED): it is not compacted.
			break
		}
	}
	res.CompactSeconds = time.Since(t0).Seconds()
	if res.Jobs, res.Compacted, err = jobsCompacted(ctx, dbURL); err != nil {
		return nil, err
	}

	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, fmt.Errorf("compacted measure: %w", err)
	}
	defer conn.Close(ctx)
	if res.OlderTransactions, err = waitOlderTransactions(ctx, conn, time.Minute); err != nil {
		return nil, err
	}
	t0 = time.Now()
	for _, t := range compactedTables {
		if _, err := conn.Exec(ctx, "VACUUM FULL "+pgx.Identifier{t}.Sanitize()); err != nil {
			return nil, fmt.Errorf("compacted measure: VACUUM FULL %s: %w", t, err)
		}
	}
	res.VacuumSeconds = time.Since(t0).Seconds()
	checkpoint(ctx, dbURL)
	after, err := tableSizes(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	res.Bookkeeping = bookkeeping(tablesBefore, after, accounts)
	return res, nil
}

// waitOlderTransactions waits until no client session of the database
// holds a snapshot or transaction older than now (VACUUM FULL keeps every
// row such a snapshot may see), up to limit, and answers how many still do.
// Sessions of other databases do not hold back the vacuum of this one's
// tables.
func waitOlderTransactions(ctx context.Context, conn *pgx.Conn, limit time.Duration) (int, error) {
	var mark string
	if err := conn.QueryRow(ctx, `SELECT pg_current_xact_id()::xid::text`).Scan(&mark); err != nil {
		return 0, fmt.Errorf("older transactions: %w", err)
	}
	for deadline := time.Now().Add(limit); ; {
		// age() counts back from the same next transaction for both sides:
		// older or as old as the mark, whatever the wraparound epoch.
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			 WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()
			   AND (age(backend_xmin) >= age($1::xid) OR age(backend_xid) >= age($1::xid))`, mark).Scan(&n); err != nil {
			return 0, fmt.Errorf("older transactions: %w", err)
		}
		if n == 0 || time.Now().After(deadline) {
			return n, nil
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return n, err
		}
	}
}
