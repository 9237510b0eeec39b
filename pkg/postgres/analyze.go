package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// AnalyzeGrownTables takes fresh planner statistics (ANALYZE) of every table
// of ours that changed by more than half its size (and 1,000 rows) since its
// statistics were last taken, and returns their names. Where autovacuum runs
// (it analyzes at a tenth) this finds nothing; where it is off or behind, a
// migration grows tables from empty to millions of rows with statistics that
// still say empty, and a prepared statement planned then keeps scanning a
// table whole as it grows (make bench-scale: import_attempts scanned 2,000
// times, the job's rate down from 610 to 220 accounts/s at 950,000 accounts;
// back to 510–590/s after one ANALYZE). ANALYZE also makes every connection
// plan its cached statements again. Half, not a tenth: plans change with the
// order of magnitude, and a table is then analyzed about a dozen times on
// its way to millions of rows, not fifty.
func (db *DB) AnalyzeGrownTables(ctx context.Context) ([]string, error) {
	rows, err := db.sql.QueryContext(ctx, `
		SELECT relname FROM pg_stat_user_tables
		 WHERE schemaname = current_schema() AND n_mod_since_analyze > 1000 + 0.5 * n_live_tup
		 ORDER BY relname`)
	if err != nil {
		return nil, fmt.Errorf("tables to analyze: %w", err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("tables to analyze: %w", err)
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("tables to analyze: %w", err)
	}
	for i, n := range names {
		if _, err := db.sql.ExecContext(ctx, `ANALYZE `+pgx.Identifier{n}.Sanitize()); err != nil {
			return names[:i], fmt.Errorf("analyze %s: %w", n, err)
		}
	}
	return names, nil
}
