package postgres

import (
	"context"
	"fmt"
	"time"
)

// The console's reads. Each is bounded by an index (migration 00013), never
// a scan of the heap per page view: see the benchmark in pkg/console.

// SupplierCounts is one supplier's row of the overview.
type SupplierCounts struct {
	Code   string
	Status string
	// By v2 status: Staged is PENDING and never scheduled; Scheduled is
	// PENDING and scheduled (waiting for a window or a slot).
	Staged, Scheduled, InProgress, Completed, Errored, Cancelled, DryRuns int64
	OldestInProgress                                                      *time.Time
}

// Total is every process of the supplier.
func (c SupplierCounts) Total() int64 {
	return c.Staged + c.Scheduled + c.InProgress + c.Completed + c.Errored + c.Cancelled + c.DryRuns
}

// OverviewCounts returns every supplier's counts by status (an index-only
// scan of import_processes_overview_idx) and its oldest account in progress
// (the first entry of import_processes_in_progress_supplier_idx).
func (db *DB) OverviewCounts(ctx context.Context) ([]SupplierCounts, error) {
	var sups []struct {
		ID     int64
		Code   string
		Status string
		Oldest *time.Time
	}
	if err := db.gorm.WithContext(ctx).Raw(`SELECT s.id, s.code, s.status,
		(SELECT min(p.modified_at) FROM import_processes p WHERE p.supplier_id = s.id AND p.status = 'IN_PROGRESS') AS oldest
		FROM import_suppliers s ORDER BY s.code`).Scan(&sups).Error; err != nil {
		return nil, fmt.Errorf("overview suppliers: %w", err)
	}
	var counts []struct {
		SupplierID int64
		V2Status   string
		Scheduled  bool
		N          int64
	}
	if err := db.gorm.WithContext(ctx).Raw(`SELECT supplier_id, v2_status, scheduled, count(*) AS n
		FROM import_processes GROUP BY supplier_id, v2_status, scheduled`).Scan(&counts).Error; err != nil {
		return nil, fmt.Errorf("overview counts: %w", err)
	}
	out := make([]SupplierCounts, len(sups))
	index := map[int64]*SupplierCounts{}
	for i, s := range sups {
		out[i] = SupplierCounts{Code: s.Code, Status: s.Status, OldestInProgress: s.Oldest}
		index[s.ID] = &out[i]
	}
	for _, c := range counts {
		sc := index[c.SupplierID]
		if sc == nil {
			continue // a supplier created after the first query
		}
		switch c.V2Status {
		case "PENDING":
			if c.Scheduled {
				sc.Scheduled += c.N
			} else {
				sc.Staged += c.N
			}
		case "IN_PROGRESS":
			sc.InProgress += c.N
		case "PROCESSED":
			sc.Completed += c.N
		case "ERRORED":
			sc.Errored += c.N
		case "CANCELLED":
			sc.Cancelled += c.N
		default:
			sc.DryRuns += c.N
		}
	}
	return out, nil
}

// MinuteCount is the number of accounts one supplier created in one minute.
type MinuteCount struct {
	Minute   time.Time
	Supplier string
	N        int64
}

// CreatedPerMinute counts accounts created per supplier and minute since
// since (an index-only range scan of import_processes_created_minute_idx).
func (db *DB) CreatedPerMinute(ctx context.Context, since time.Time) ([]MinuteCount, error) {
	var rows []MinuteCount
	if err := db.gorm.WithContext(ctx).Raw(`SELECT c.minute, s.code AS supplier, c.n FROM (
			SELECT date_trunc('minute', account_created_at) AS minute, supplier_id, count(*) AS n
			  FROM import_processes WHERE account_created_at >= ? GROUP BY 1, 2) c
		JOIN import_suppliers s ON s.id = c.supplier_id ORDER BY c.minute, s.code`, since).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("created per minute: %w", err)
	}
	return rows, nil
}

// ErrorGroup is the failed accounts of a supplier sharing one error code.
type ErrorGroup struct {
	Code     string
	Count    int64
	Examples []ErrorExample
}

// ErrorExample is one failed account of an ErrorGroup.
type ErrorExample struct {
	External string `json:"external"`
	Detail   string `json:"detail"`
}

// SupplierErrors groups the supplier's errored accounts (v2 ERRORED and
// DRY_RUN_ERRORED) by their latest error's code, most frequent first, with
// up to 5 most recent examples each.
func (db *DB) SupplierErrors(ctx context.Context, code string) ([]ErrorGroup, error) {
	var rows []struct {
		Code     string
		Count    int64
		External string
		Detail   string
	}
	if err := db.gorm.WithContext(ctx).Raw(`WITH e AS (
		SELECT coalesce(p.latest_error->>'code', 'unknown') AS code, p.external_account_number AS external,
		       coalesce(p.latest_error->>'detail', '') AS detail,
		       row_number() OVER (PARTITION BY coalesce(p.latest_error->>'code', 'unknown') ORDER BY p.modified_at DESC, p.id DESC) AS rank,
		       count(*) OVER (PARTITION BY coalesce(p.latest_error->>'code', 'unknown')) AS count
		  FROM import_processes p JOIN import_suppliers s ON s.id = p.supplier_id AND s.code = ?
		 WHERE p.v2_status IN ('ERRORED', 'DRY_RUN_ERRORED'))
		SELECT code, count, external, detail FROM e WHERE rank <= 5 ORDER BY count DESC, code, rank`, code).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("supplier errors: %w", err)
	}
	var out []ErrorGroup
	for _, r := range rows {
		if len(out) == 0 || out[len(out)-1].Code != r.Code {
			out = append(out, ErrorGroup{Code: r.Code, Count: r.Count})
		}
		g := &out[len(out)-1]
		g.Examples = append(g.Examples, ErrorExample{External: r.External, Detail: r.Detail})
	}
	return out, nil
}
