package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Reconciliation (CONTRACT §14): the figures of a supplier's accounts as
// read back from the platform's tables beside the same figures of the
// staged payloads they were created from, account by account. Accounts
// are read in pages (by id, a page's children in one statement), so memory
// stays bounded whatever the supplier's size; only the first
// MaxReconciliationDifferences differences are kept, the rest counted.

// ReconciliationFilter narrows the accounts: those a job created, or those
// created since a time; zero: every account of the supplier.
type ReconciliationFilter struct {
	JobID int64
	Since *time.Time
}

// MaxReconciliationDifferences bounds the differences listed.
const MaxReconciliationDifferences = 1000

// reconcilePage is how many accounts one round reads.
const reconcilePage = 500

// FigureAccounts is the count of accounts in a reconciliation's totals.
const FigureAccounts = "accounts"

// Reconciliation is the answer of GET /reconciliation/.
type Reconciliation struct {
	Landed, Staged    dataimport.AccountFigures
	Differences       []dataimport.FigureDifference
	MoreDifferences   int64 // differences past the cap
	DifferingAccounts int64
}

// LandedStaged is one account: as it landed, with its figures, and the
// figures of the payload it was created from.
type LandedStaged struct {
	LandedAccount
	LandedFigures, StagedFigures dataimport.AccountFigures
}

// EachLanded calls fn for every account of the supplier the filter keeps,
// in id order, a page at a time.
func (db *DB) EachLanded(ctx context.Context, supplierID int64, f ReconciliationFilter, fn func(LandedStaged) error) error {
	var after int64
	for {
		// A compacted job's accounts have no staged version left, only the
		// figures of the one they were created from (job_compact.go).
		q := `SELECT a.id, v.payload::text, p.staged_figures::text FROM accounts a
			JOIN import_processes p ON p.id = a.import_process_id
			LEFT JOIN import_process_versions v ON v.process_id = p.id AND v.version = p.staged_version
			WHERE a.supplier_id = $1 AND a.id > $2`
		args := []any{supplierID, after}
		if f.JobID != 0 {
			args = append(args, f.JobID)
			q += fmt.Sprintf(` AND a.external_account_number IN (SELECT r.external_account_number FROM import_job_records r
				WHERE r.job_id = $%d AND r.outcome = 'created')`, len(args))
		}
		if f.Since != nil {
			args = append(args, *f.Since)
			q += fmt.Sprintf(` AND a.created_at >= $%d`, len(args))
		}
		args = append(args, reconcilePage)
		rows, err := db.readSQL.QueryContext(ctx, q+fmt.Sprintf(` ORDER BY a.id LIMIT $%d`, len(args)), args...)
		if err != nil {
			return fmt.Errorf("reconcile: %w", err)
		}
		var ids []int64
		payloads, kept := map[int64]string{}, map[int64]string{}
		for rows.Next() {
			var id int64
			var payload, figures *string
			if err := rows.Scan(&id, &payload, &figures); err != nil {
				rows.Close()
				return fmt.Errorf("reconcile: %w", err)
			}
			ids = append(ids, id)
			if payload != nil {
				payloads[id] = *payload
			} else if figures != nil {
				kept[id] = *figures
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("reconcile: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		landed, err := db.landedAccounts(ctx, ids)
		if err != nil {
			return err
		}
		for _, id := range ids {
			l, ok := landed[id]
			if !ok {
				continue // deleted meanwhile
			}
			ls := LandedStaged{LandedAccount: l, StagedFigures: dataimport.AccountFigures{}}
			if ls.LandedFigures, err = dataimport.LandedFigures(l.JSON); err != nil {
				return err
			}
			if p, ok := payloads[id]; ok {
				var a dataimport.Account
				if err := json.Unmarshal([]byte(p), &a); err != nil {
					return fmt.Errorf("reconcile: staged payload of %s: %w", l.ExternalAccountNumber, err)
				}
				ls.StagedFigures = dataimport.StagedFigures(&a)
			} else if k, ok := kept[id]; ok {
				if ls.StagedFigures, err = figuresFromKept(k); err != nil {
					return fmt.Errorf("reconcile: %s: %w", l.ExternalAccountNumber, err)
				}
			}
			if err := fn(ls); err != nil {
				return err
			}
		}
		after = ids[len(ids)-1]
	}
}

// Reconcile compares what landed with what was staged for the supplier's
// accounts the filter keeps.
func (db *DB) Reconcile(ctx context.Context, supplierID int64, f ReconciliationFilter) (Reconciliation, error) {
	r := Reconciliation{Landed: dataimport.NewFigures(), Staged: dataimport.NewFigures(), Differences: []dataimport.FigureDifference{}}
	one := decimal.NewFromInt(1)
	r.Landed[FigureAccounts], r.Staged[FigureAccounts] = decimal.Zero, decimal.Zero
	err := db.EachLanded(ctx, supplierID, f, func(ls LandedStaged) error {
		r.Landed.Add(ls.LandedFigures)
		r.Landed[FigureAccounts] = r.Landed[FigureAccounts].Add(one)
		if len(ls.StagedFigures) > 0 {
			r.Staged.Add(ls.StagedFigures)
			r.Staged[FigureAccounts] = r.Staged[FigureAccounts].Add(one)
		}
		diffs := dataimport.DiffFigures(ls.ExternalAccountNumber, ls.LandedFigures, ls.StagedFigures)
		if len(ls.StagedFigures) == 0 {
			diffs = []dataimport.FigureDifference{{ExternalAccountNumber: ls.ExternalAccountNumber, Field: dataimport.FieldAccount,
				Landed: dataimport.Present, Staged: dataimport.Missing}}
		}
		if len(diffs) > 0 {
			r.DifferingAccounts++
		}
		for _, d := range diffs {
			if len(r.Differences) < MaxReconciliationDifferences {
				r.Differences = append(r.Differences, d)
			} else {
				r.MoreDifferences++
			}
		}
		return nil
	})
	return r, err
}
