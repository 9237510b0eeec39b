package postgres

import (
	"context"
	"fmt"
	"time"
)

// AcceptedLine is a valid line of an accepted bulk job whose account the
// worker has not staged yet: the account exists for partners from the 202
// on (status UNKNOWN / v2 PENDING), though no import process has a row.
type AcceptedLine struct {
	JobID       int64
	ReceivedAt  time.Time
	WindowStart *time.Time
	WindowEnd   *time.Time
}

// AcceptedLineLookup is what the status miss path learns from the live jobs.
type AcceptedLineLookup struct {
	Line  AcceptedLine
	Found bool // a line still waiting to be staged
	// Staged: a line of a live job has already moved past staging, so a
	// process exists now (the worker staged it between the two reads);
	// the caller reads the process again rather than answer 404.
	Staged bool
}

// AcceptedJobLine looks for external among the lines of the supplier's
// PROCESSING jobs (those that answered 202; RECEIVING ones have not), for
// an organisation granted the supplier: the same tenancy as a staged
// account. Only the status miss path calls it. Live jobs are few, so it is
// one probe of import_job_records_external_idx per live job; nothing is
// cached, so it never answers from a stale state. An invalid line is not
// an account (its failure is in the failures API) and a cancelled one is
// no longer waiting: neither is found.
func (db *DB) AcceptedJobLine(ctx context.Context, orgID int64, supplierCode, external string) (AcceptedLineLookup, error) {
	rows, err := db.readSQL.QueryContext(ctx, `
		SELECT j.id, j.received_at, j.window_start, j.window_end,
		       r.outcome = 'pending' OR (r.outcome = 'duplicate_line' AND r.staged_version IS NULL) AS waiting
		  FROM import_suppliers s
		  JOIN organisation_suppliers g ON g.supplier_id = s.id AND g.organisation_id = $1
		  JOIN import_jobs j ON j.supplier_id = s.id AND j.state = 'PROCESSING'
		  JOIN import_job_records r ON r.job_id = j.id AND r.external_account_number = $3
		 WHERE s.code = $2 AND r.outcome NOT IN ('invalid', 'cancelled')
		 ORDER BY j.received_at, j.id, r.line`, orgID, supplierCode, external)
	if err != nil {
		return AcceptedLineLookup{}, fmt.Errorf("look up accepted job line: %w", err)
	}
	defer rows.Close()
	var out AcceptedLineLookup
	for rows.Next() {
		var l AcceptedLine
		var received *time.Time
		var waiting bool
		if err := rows.Scan(&l.JobID, &received, &l.WindowStart, &l.WindowEnd, &waiting); err != nil {
			return AcceptedLineLookup{}, fmt.Errorf("read accepted job line: %w", err)
		}
		if received != nil {
			l.ReceivedAt = *received
		}
		switch {
		case !waiting:
			out.Staged = true
		case !out.Found: // the oldest job's line: its account has existed longest
			out.Line, out.Found = l, true
		}
	}
	if err := rows.Err(); err != nil {
		return AcceptedLineLookup{}, fmt.Errorf("read accepted job lines: %w", err)
	}
	return out, nil
}
