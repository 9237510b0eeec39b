package postgres_test

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
)

// statementFKsMigration declares the hot tables' foreign keys checked per
// statement (migrations/00033_statement_foreign_keys.sql).
const statementFKsMigration = 33

type foreignKey struct {
	Name, Child, Parent, OnDelete string
	ChildCols, ParentCols         []string
}

func (e *env) statementFKs() []foreignKey {
	e.tb.Helper()
	var rows []struct {
		Name, Child, Parent, OnDelete string
		ChildCols, ParentCols         string
	}
	e.must(e.g.Raw(`SELECT name, child, parent, on_delete, array_to_string(child_cols, ',') AS child_cols,
		array_to_string(parent_cols, ',') AS parent_cols FROM dataimport_statement_fks ORDER BY name`).Scan(&rows).Error)
	out := make([]foreignKey, len(rows))
	for i, r := range rows {
		out[i] = foreignKey{Name: r.Name, Child: r.Child, Parent: r.Parent, OnDelete: r.OnDelete,
			ChildCols: strings.Split(r.ChildCols, ","), ParentCols: strings.Split(r.ParentCols, ",")}
	}
	return out
}

// fkOutcome is what one statement did: its SQLSTATE and constraint, or
// "ok", and how many child rows still hold the key it touched.
func fkOutcome(err error, left int) string {
	var pg *pgconn.PgError
	switch {
	case err == nil:
		return fmt.Sprintf("ok, %d left", left)
	case errors.As(err, &pg):
		return fmt.Sprintf("%s %s", pg.Code, pg.ConstraintName)
	}
	return err.Error()
}

// fkOps runs, for each key, every statement that a foreign key governs,
// each in a transaction rolled back after, and says what each did:
//   - insert: a child row whose key (its last column) names no parent row;
//   - reinsert: the same row as it was (valid);
//   - update: a child row's key changed to name no parent row;
//   - delete: the parent row a child row names;
//   - key: that parent row's key changed;
//   - truncate: the parent alone.
func (e *env) fkOps(keys []foreignKey) map[string]string {
	e.tb.Helper()
	out := map[string]string{}
	cols := func(prefix string, cs []string) string {
		q := make([]string, len(cs))
		for i, c := range cs {
			q[i] = prefix + `"` + c + `"`
		}
		return strings.Join(q, ", ")
	}
	for _, k := range keys {
		last := k.ChildCols[len(k.ChildCols)-1]
		lastParent := k.ParentCols[len(k.ParentCols)-1]
		// The key of one child row, and how many child rows hold it.
		// The child row tried: the first whose key has no NULL (a key
		// with one is not checked).
		notNull := make([]string, len(k.ChildCols))
		for i, c := range k.ChildCols {
			notNull[i] = fmt.Sprintf(`%q IS NOT NULL`, c)
		}
		first := fmt.Sprintf(`(SELECT ctid FROM %s WHERE %s ORDER BY ctid LIMIT 1)`, k.Child, strings.Join(notNull, " AND "))
		keyOf := fmt.Sprintf(`(SELECT %s FROM %s c WHERE c.ctid = %s)`, cols("c.", k.ChildCols), k.Child, first)
		left := func(tx *gorm.DB, key []any) int {
			var n int
			where := make([]string, len(k.ChildCols))
			for i, c := range k.ChildCols {
				where[i] = fmt.Sprintf(`%q = ?`, c)
			}
			e.must(tx.Raw(`SELECT count(*) FROM `+k.Child+` WHERE `+strings.Join(where, " AND "), key...).Scan(&n).Error)
			return n
		}
		run := func(op string, f func(tx *gorm.DB, key []any) error) {
			tx := e.g.Begin()
			defer tx.Rollback()
			row, err := tx.Raw(`SELECT ` + cols("", k.ChildCols) + ` FROM ` + keyOf + ` k`).Rows()
			e.must(err)
			key := make([]any, len(k.ChildCols))
			ptrs := make([]any, len(key))
			for i := range key {
				ptrs[i] = &key[i]
			}
			if !row.Next() {
				e.tb.Fatalf("%s: no row of %s with a key to try: give the fixture one", k.Name, k.Child)
			}
			e.must(row.Scan(ptrs...))
			row.Close()
			err = f(tx, key)
			n := -1
			if err == nil {
				n = left(tx, key)
			}
			out[k.Name+" "+op] = fkOutcome(err, n)
		}
		// Set one child row aside without firing anything, so that putting
		// it back (changed or not) meets no unique key.
		setAside := func(tx *gorm.DB) error {
			for _, q := range []string{
				`SET LOCAL session_replication_role = replica`,
				`CREATE TEMP TABLE fk_saved ON COMMIT DROP AS SELECT * FROM ` + k.Child + ` WITH NO DATA`,
				`WITH d AS (DELETE FROM ` + k.Child + ` WHERE ctid = ` + first + ` RETURNING *)
				 INSERT INTO fk_saved SELECT * FROM d`,
				`SET LOCAL session_replication_role = origin`,
			} {
				if err := tx.Exec(q).Error; err != nil {
					return err
				}
			}
			return nil
		}
		run("insert", func(tx *gorm.DB, _ []any) error {
			e.must(setAside(tx))
			return tx.Exec(fmt.Sprintf(`INSERT INTO %s SELECT (jsonb_populate_record(NULL::%s, to_jsonb(s) || jsonb_build_object(%s, '-1'))).* FROM fk_saved s`,
				k.Child, k.Child, "'"+last+"'")).Error
		})
		run("reinsert", func(tx *gorm.DB, _ []any) error {
			e.must(setAside(tx))
			return tx.Exec(`INSERT INTO ` + k.Child + ` SELECT * FROM fk_saved`).Error
		})
		run("update", func(tx *gorm.DB, _ []any) error {
			return tx.Exec(fmt.Sprintf(`UPDATE %s SET %q = '-1' WHERE ctid = %s`, k.Child, last, first)).Error
		})
		where := make([]string, len(k.ParentCols))
		for i, c := range k.ParentCols {
			where[i] = fmt.Sprintf(`%q = ?`, c)
		}
		run("delete", func(tx *gorm.DB, key []any) error {
			return tx.Exec(`DELETE FROM `+k.Parent+` WHERE `+strings.Join(where, " AND "), key...).Error
		})
		run("key", func(tx *gorm.DB, key []any) error {
			return tx.Exec(fmt.Sprintf(`UPDATE %s SET %q = '-1' WHERE `, k.Parent, lastParent)+strings.Join(where, " AND "), key...).Error
		})
		run("truncate", func(tx *gorm.DB, _ []any) error {
			return tx.Exec(`TRUNCATE ` + k.Parent).Error
		})
	}
	return out
}

// TestStatementForeignKeysDoWhatDeclaredOnesDid: every foreign key the
// import's hot tables check per statement (migration 00033) answers every
// statement it governs as the declared constraint it replaced: the same
// SQLSTATE, the same constraint name, the same rows left. The oracle is
// Postgres itself: the same statements run again after the migration is
// undone, which declares the keys again from their record. A key the
// fixture has no row for fails, so none goes untried.
func TestStatementForeignKeysDoWhatDeclaredOnesDid(t *testing.T) {
	e := newEnv(t)
	s := e.supplier("FK_ENERGY", true)
	e.create(verified(e.prepare(s, "FK-1", false, withPayments)))
	e.rerunJob(s, "FK Partner", []string{"pending"})
	// A cancelled job: its end event names the supplier and organisation.
	job := e.rerunJob(s, "FK Partner 2", []string{"pending"})
	_, err := e.db.CancelJob(e.ctx, job.OrganisationID, job.ID)
	e.must(err)

	keys := e.statementFKs()
	if len(keys) < 20 {
		t.Fatalf("%d foreign keys checked per statement; the migration records each it replaces", len(keys))
	}
	perStatement := e.fkOps(keys)

	e.must(e.db.MigrateTo(e.ctx, statementFKsMigration-1))
	var declared int
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Name
	}
	e.scalar(&declared, `SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND conname IN ?`, names)
	if declared != len(keys) {
		t.Fatalf("undoing the migration declared %d of %d keys again", declared, len(keys))
	}
	asDeclared := e.fkOps(keys)
	e.must(e.db.MigrateTo(e.ctx, statementFKsMigration))

	byName := map[string]foreignKey{}
	for _, k := range keys {
		byName[k.Name] = k
	}
	code := func(o string) string { return strings.Fields(o)[0] }
	ops := make([]string, 0, len(asDeclared))
	for op := range asDeclared {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	for _, op := range ops {
		name, kind, _ := strings.Cut(op, " ")
		k, got, want := byName[name], perStatement[op], asDeclared[op]
		switch kind {
		case "insert", "reinsert", "update":
			// The same answer, constraint named; when the row is also a
			// parent, whichever of its keys is checked first may answer
			// (the firing order of the triggers), so then the code only.
			other := false
			for _, o := range keys {
				if o.Parent == k.Child && (strings.HasSuffix(want, " "+o.Name) || strings.HasSuffix(got, " "+o.Name)) {
					other = true
				}
			}
			if got != want && !(other && code(got) == code(want)) {
				t.Errorf("%s: per statement %q, declared %q", op, got, want)
			}
			if kind != "reinsert" && want != "23503 "+name && !other {
				t.Errorf("%s: declared %q: the statement did not reach the key", op, want)
			}
			if kind == "reinsert" && !strings.HasPrefix(want, "ok") {
				t.Errorf("%s: declared %q", op, want)
			}
		default:
			// A parent row several keys reference: the same code and rows
			// left; which key answers first is the triggers' firing order
			// (and a declared key's TRUNCATE refusal names none).
			if code(got) != code(want) || (code(want) == "ok," && got != want) {
				t.Errorf("%s: per statement %q, declared %q", op, got, want)
			}
		}
	}
	// The declared keys of every other table are untouched.
	var left int
	e.scalar(&left, `SELECT count(*) FROM dataimport_foreign_keys WHERE NOT per_statement`)
	if left == 0 {
		t.Error("no declared foreign key left")
	}
}

// TestStatementForeignKeyLocksTheParent: as a declared key's check did, the
// per-statement check locks the parent rows FOR KEY SHARE until the
// inserting transaction ends, so a concurrent DELETE of the parent waits
// for it (and then cascades to the committed row), and an insert naming a
// parent whose DELETE is under way waits, then is refused.
func TestStatementForeignKeyLocksTheParent(t *testing.T) {
	e := newEnv(t)
	s := e.supplier("FK_LOCK_ENERGY", false)
	e.create(verified(e.prepare(s, "FK-LOCK-1", false, withPayments)))
	var accountID int64
	e.scalar(&accountID, `SELECT id FROM accounts LIMIT 1`)
	const note = `INSERT INTO account_notes (account_id, body, document_paths, is_pinned, created_at) VALUES (?, 'n', '[]', false, now())`
	lockTimeout := func(err error) bool {
		var pg *pgconn.PgError
		return errors.As(err, &pg) && pg.Code == "55P03"
	}

	// dataimport.creating: the landed-version trigger, which updates the
	// account row, stays out of it, so the only lock is the key's.
	inserting := e.g.Begin()
	e.must(inserting.Exec(`SET LOCAL dataimport.creating = 'on'`).Error)
	e.must(inserting.Exec(note, accountID).Error)
	deleting := e.g.Begin()
	e.must(deleting.Exec(`SET LOCAL lock_timeout = '200ms'`).Error)
	if err := deleting.Exec(`DELETE FROM accounts WHERE id = ?`, accountID).Error; !lockTimeout(err) {
		t.Errorf("DELETE of the parent while a child insert is open: %v, want a lock wait", err)
	}
	deleting.Rollback()
	e.must(inserting.Commit().Error)

	deleting = e.g.Begin()
	var processID int64
	e.scalar(&processID, `SELECT import_process_id FROM accounts WHERE id = ?`, accountID)
	e.must(deleting.Exec(`DELETE FROM accounts WHERE id = ?`, accountID).Error)
	e.must(deleting.Exec(`DELETE FROM import_processes WHERE id = ?`, processID).Error) // its deferred key to the account
	inserting = e.g.Begin()
	e.must(inserting.Exec(`SET LOCAL dataimport.creating = 'on'`).Error)
	e.must(inserting.Exec(`SET LOCAL lock_timeout = '200ms'`).Error)
	if err := inserting.Exec(note, accountID).Error; !lockTimeout(err) {
		t.Errorf("child insert while the parent's DELETE is open: %v, want a lock wait", err)
	}
	inserting.Rollback()
	e.must(deleting.Commit().Error)
	var notes int
	e.scalar(&notes, `SELECT count(*) FROM account_notes WHERE account_id = ?`, accountID)
	if notes != 0 {
		t.Errorf("%d notes of the deleted account left", notes)
	}
	err := e.g.Exec(note, accountID).Error
	var pg *pgconn.PgError
	if !errors.As(err, &pg) || pg.Code != "23503" || pg.ConstraintName != "account_notes_account_id_fkey" {
		t.Errorf("note for the deleted account: %v", err)
	}
}
