package postgres

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/queue"
)

// CapScope names what a concurrency cap applies to.
type CapScope string

// Cap scopes: one supplier's accounts, or one organisation's (whatever
// supplier they are for).
const (
	CapSupplier     CapScope = "supplier"
	CapOrganisation CapScope = "organisation"
)

// ConcurrencyCaps are the per-supplier and per-organisation caps (ids to
// caps) inside the cluster-wide cap.
type ConcurrencyCaps struct {
	Suppliers     map[int64]int
	Organisations map[int64]int
}

// For is the caps one acquire for own is under, with the global cap
// (0: off).
func (c ConcurrencyCaps) For(global int, own queue.Owner) queue.Caps {
	return queue.Caps{Global: global, Supplier: c.Suppliers[own.Supplier], Organisation: c.Organisations[own.Organisation]}
}

// ConcurrencyCaps reads every per-supplier and per-organisation cap. The
// list is short and read on every create, so it is kept in the control
// cache (migration 00028 announces changes on dataimport_control).
func (db *DB) ConcurrencyCaps(ctx context.Context) (ConcurrencyCaps, error) {
	return cachedControl(db, "caps", func() (ConcurrencyCaps, error) {
		var rows []struct {
			SupplierID, OrganisationID *int64
			Cap                        int
		}
		if err := db.gorm.WithContext(ctx).Raw(`SELECT supplier_id, organisation_id, cap FROM concurrency_caps`).Scan(&rows).Error; err != nil {
			return ConcurrencyCaps{}, fmt.Errorf("concurrency caps: %w", err)
		}
		out := ConcurrencyCaps{Suppliers: map[int64]int{}, Organisations: map[int64]int{}}
		for _, r := range rows {
			if r.SupplierID != nil {
				out.Suppliers[*r.SupplierID] = r.Cap
			} else if r.OrganisationID != nil {
				out.Organisations[*r.OrganisationID] = r.Cap
			}
		}
		return out, nil
	})
}

// Caps is the global cap with the caps of own: what an acquire passes to
// the semaphore.
func (db *DB) Caps(ctx context.Context, own queue.Owner) (queue.Caps, error) {
	global, on, err := db.ConcurrencyLimit(ctx)
	if err != nil {
		return queue.Caps{}, err
	}
	if !on {
		global = 0
	}
	caps, err := db.ConcurrencyCaps(ctx)
	if err != nil {
		return queue.Caps{}, err
	}
	return caps.For(global, own), nil
}

// ErrCapSubjectNotFound: the supplier or organisation named has no row.
var ErrCapSubjectNotFound = errors.New("no such supplier or organisation")

// SetConcurrencyCap sets the cap (n > 0) of the supplier (by code) or the
// organisation (by name) or, with n <= 0, removes it; audited as limit.set
// with the target "supplier:<code>" or "org:<name>" (as their other rows).
func (db *DB) SetConcurrencyCap(ctx context.Context, scope CapScope, name string, n int) error {
	defer db.control.invalidate()
	var lookup, col, target string
	switch scope {
	case CapSupplier:
		lookup, col, target = `SELECT id FROM import_suppliers WHERE code = ?`, "supplier_id", "supplier:"+name
	case CapOrganisation:
		lookup, col, target = `SELECT id FROM organisations WHERE name = ?`, "organisation_id", "org:"+name
	default:
		return fmt.Errorf("set concurrency cap: unknown scope %q", scope)
	}
	err := db.audited(ctx, AuditLimitSet, func(tx *gorm.DB) (string, any, any, error) {
		var ids []int64
		if err := tx.Raw(lookup, name).Scan(&ids).Error; err != nil {
			return "", nil, nil, err
		}
		if len(ids) != 1 {
			return "", nil, nil, fmt.Errorf("%s %q: %w", scope, name, ErrCapSubjectNotFound)
		}
		var old []int
		if err := tx.Raw(`SELECT cap FROM concurrency_caps WHERE `+col+` = ? FOR UPDATE`, ids[0]).Scan(&old).Error; err != nil {
			return "", nil, nil, err
		}
		before := limitAudit(0)
		if len(old) == 1 {
			before = limitAudit(old[0])
		}
		var err error
		if n <= 0 {
			err = tx.Exec(`DELETE FROM concurrency_caps WHERE `+col+` = ?`, ids[0]).Error
		} else {
			err = tx.Exec(`INSERT INTO concurrency_caps (`+col+`, cap) VALUES (?, ?)
				ON CONFLICT (`+col+`) WHERE `+col+` IS NOT NULL DO UPDATE SET cap = EXCLUDED.cap, updated_at = now()`, ids[0], n).Error
		}
		return target, before, limitAudit(n), err
	})
	if err != nil {
		return fmt.Errorf("set %s concurrency cap: %w", scope, err)
	}
	return nil
}

// NamedCap is a cap with the code or name of what it applies to (for
// importctl and the console).
type NamedCap struct {
	Scope CapScope `json:"scope"`
	ID    int64    `json:"id"`
	Name  string   `json:"name"`
	Cap   int      `json:"cap"`
}

// NamedConcurrencyCaps lists the caps, suppliers first, by name.
func (db *DB) NamedConcurrencyCaps(ctx context.Context) ([]NamedCap, error) {
	var out []NamedCap
	err := db.gorm.WithContext(ctx).Raw(`
		SELECT 'supplier' AS scope, s.id, s.code AS name, c.cap FROM concurrency_caps c JOIN import_suppliers s ON s.id = c.supplier_id
		UNION ALL
		SELECT 'organisation', o.id, o.name, c.cap FROM concurrency_caps c JOIN organisations o ON o.id = c.organisation_id
		ORDER BY 1 DESC, 3`).Scan(&out).Error
	if err != nil {
		return nil, fmt.Errorf("named concurrency caps: %w", err)
	}
	return out, nil
}
