package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// ListFilter selects which import processes a list endpoint returns.
type ListFilter int

const (
	ListAll      ListFilter = iota // staged or created
	ListPending                    // staged, no platform account yet
	ListImported                   // has a platform account
)

// ListRecord is one item of the list endpoints (interface 2.10).
type ListRecord struct {
	ExternalAccountNumber string
	PlatformAccountNumber *string
	AccountCreatedAt      *time.Time
}

// EachProcess streams a supplier's import records ordered by external number,
// starting after `after` (keyset pagination; "" for the start), at most limit
// rows (0: no limit). Rows are handed to fn one at a time straight from the
// wire, so memory does not grow with the list.
// It reads from the read replica when one is configured (UseReadReplica), so
// the newest rows may be missing for the replication delay.
func (db *DB) EachProcess(ctx context.Context, supplierID int64, f ListFilter, after string, limit int, fn func(ListRecord) error) error {
	q := `SELECT external_account_number, platform_account_number, account_created_at
	        FROM import_processes
	       WHERE supplier_id = $1 AND external_account_number > $2`
	switch f {
	case ListPending:
		q += ` AND platform_account_number IS NULL AND staged_version > 0`
	case ListImported:
		q += ` AND platform_account_number IS NOT NULL`
	default:
		q += ` AND (staged_version > 0 OR platform_account_number IS NOT NULL)`
	}
	q += ` ORDER BY external_account_number`
	args := []any{supplierID, after}
	if limit > 0 {
		q += ` LIMIT $3`
		args = append(args, limit)
	}
	rows, err := db.readSQL.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("list import processes: %w", err)
	}
	defer rows.Close()
	var rec ListRecord
	var platform sql.NullString
	var created sql.NullTime
	for rows.Next() {
		if err := rows.Scan(&rec.ExternalAccountNumber, &platform, &created); err != nil {
			return fmt.Errorf("list import processes: %w", err)
		}
		rec.PlatformAccountNumber, rec.AccountCreatedAt = nil, nil
		if platform.Valid {
			// A fresh string per row: callers may keep the record.
			n := platform.String
			rec.PlatformAccountNumber = &n
		}
		if created.Valid {
			t := created.Time.UTC()
			rec.AccountCreatedAt = &t
		}
		if err := fn(rec); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list import processes: %w", err)
	}
	return nil
}
