package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gridshift/dataimport/jobs"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// compactedResult is the bookkeeping measured again once the jobs are
// compacted, without dead rows.
//
// The compaction of a completed job (pkg/postgres/job_compact.go) writes
// bookkeeping tables only (TestCompactionWritesNoAccountTable): the lines
// lose their text, the staged versions are deleted, the processes keep the
// staged figures. The rows it replaced or deleted stay in the files as dead
// rows until a vacuum makes their space reusable, as do those processing
// left (a line's outcome, a process's states, each event numbered by the
// relay after it was written). So every bookkeeping table is rewritten by
// VACUUM FULL (its TOAST and indexes with it) before the measure. The
// account tables are not: creation only inserts into them (AccountRowsChanged
// counts otherwise), and they are most of the bytes.
type compactedResult struct {
	Jobs int `json:"jobs"`
	// Jobs the worker had compacted by itself (JOB_COMPACT_AFTER after
	// each completed) when the first bookkeeping figure was taken, and
	// jobs compacted once the compacted measure was taken.
	CompactedAtCompletion int `json:"compacted_at_completion"`
	Compacted             int `json:"compacted"`
	// The compactor's pass over the jobs not compacted yet (jobs.JobCompactor,
	// run by loadgen) and the VACUUM FULL of the bookkeeping tables, in
	// seconds.
	CompactSeconds float64 `json:"compact_seconds"`
	VacuumSeconds  float64 `json:"vacuum_seconds"`
	VacuumedTables int     `json:"vacuumed_tables"`
	// Rows of the account tables updated or deleted since the database was
	// created (pg_stat_user_tables): their dead rows count in the measure.
	AccountRowsChanged int64 `json:"account_rows_changed"`
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
// then rewrites every bookkeeping table (VACUUM FULL, once no transaction
// of the database older than the compaction runs) and measures every table
// as the first figure was: growth since tablesBefore after a CHECKPOINT.
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
	tables, err := tableSizes(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	t0 = time.Now()
	for _, t := range slices.Sorted(maps.Keys(tables)) {
		if isAccountTable(t) {
			continue
		}
		if _, err := conn.Exec(ctx, "VACUUM FULL "+pgx.Identifier{t}.Sanitize()); err != nil {
			return nil, fmt.Errorf("compacted measure: VACUUM FULL %s: %w", t, err)
		}
		res.VacuumedTables++
	}
	res.VacuumSeconds = time.Since(t0).Seconds()
	if err := conn.QueryRow(ctx, `SELECT coalesce(sum(n_tup_upd + n_tup_del), 0) FROM pg_stat_user_tables
		 WHERE schemaname = current_schema() AND relname = ANY($1)`, accountTables).Scan(&res.AccountRowsChanged); err != nil {
		return nil, fmt.Errorf("compacted measure: account rows changed: %w", err)
	}
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
