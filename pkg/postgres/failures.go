package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/storable"
)

// Failure records (CONTRACT §13, migration 00021): every account-level
// refusal or failure, once per (supplier, external number, source,
// fingerprint), counted and resolved by a later success.

// Sources of a failure record.
const (
	FailureStage   = "stage"    // a v1 stage (or v2 create) refused for the account's data
	FailureJobLine = "job_line" // an invalid line of a bulk upload
	FailureCreate  = "create"   // a creation attempt that failed (any path), or a job line whose window expired
)

// FailureSources lists them, for the API's filter.
var FailureSources = []string{FailureStage, FailureJobLine, FailureCreate}

// failureExternalMax bounds the external number a record keeps: a refusal
// may be for an over-long or unclean number (cleaned by pkg/storable).
const failureExternalMax = 512

// upsertFailures is the one statement that records failures, whoever
// writes them: %s is a query of (organisation_id, supplier_id,
// external_account_number, source, error, job_id, line, n) rows. Rows of
// one key are folded first (ON CONFLICT may touch a row once), keeping the
// last line's error and summing n. It is a single INSERT, so it also runs
// as a data-modifying CTE inside another writer's statement.
const upsertFailures = `
	INSERT INTO import_failures AS f (organisation_id, supplier_id, external_account_number, source, fingerprint, codes, attrs,
	                                  error, job_id, line, occurrences)
	SELECT DISTINCT ON (supplier_id, external_account_number, source, fp)
	       organisation_id, supplier_id, external_account_number, source, fp,
	       ARRAY(SELECT code FROM import_failure_fields(error)), ARRAY(SELECT attr FROM import_failure_fields(error)),
	       error, job_id, line, sum(n) OVER (PARTITION BY supplier_id, external_account_number, source, fp)
	  FROM (SELECT s.*, import_failure_fingerprint(s.error) AS fp
	          FROM (%s) AS s(organisation_id, supplier_id, external_account_number, source, error, job_id, line, n)) src
	 ORDER BY supplier_id, external_account_number, source, fp, line DESC NULLS LAST
	ON CONFLICT (supplier_id, external_account_number, source, fingerprint) DO UPDATE
	   SET occurrences = f.occurrences + excluded.occurrences, last_seen = now(), error = excluded.error,
	       organisation_id = coalesce(excluded.organisation_id, f.organisation_id),
	       job_id = coalesce(excluded.job_id, f.job_id),
	       line = CASE WHEN excluded.job_id IS NULL THEN f.line ELSE excluded.line END,
	       resolved_at = NULL`

// upsertJobLineFailures records a job's lines refused for their data ($2
// external numbers, $3 error JSON, $4 lines): invalid at upload, or refused
// by the database at staging.
var upsertJobLineFailures = fmt.Sprintf(upsertFailures, `
	SELECT j.organisation_id, j.supplier_id, u.ext, 'job_line', u.err::jsonb, j.id, u.line, 1::bigint
	  FROM unnest($2::text[], $3::text[], $4::bigint[]) AS u(ext, err, line), import_jobs j WHERE j.id = $1`)

// resolveStaged marks resolved, inside a staging statement whose CTE p
// returns the staged processes, the data refusals of those accounts: their
// data has now been accepted. Creation failures stay until a creation
// succeeds.
const resolveStaged = `
		), resolved AS (
			UPDATE import_failures f SET resolved_at = now()
			  FROM p WHERE f.supplier_id = p.supplier_id AND f.external_account_number = p.external_account_number
			   AND f.source IN ('stage', 'job_line') AND f.resolved_at IS NULL`

// resolveCreated marks resolved every failure of the processes $1 (just
// created), in the creation transaction.
const resolveCreated = `UPDATE import_failures f SET resolved_at = now()
	  FROM import_processes p WHERE p.id = ANY($1::bigint[])
	   AND f.supplier_id = p.supplier_id AND f.external_account_number = p.external_account_number AND f.resolved_at IS NULL`

// RecordStageRefusal records the refusal of an account's data by the v1
// stage (or v2 create) for the caller's organisation.
func (db *DB) RecordStageRefusal(ctx context.Context, orgID, supplierID int64, external string, e *dataimport.Error) error {
	ej, err := json.Marshal(storableError(e))
	if err != nil {
		return fmt.Errorf("record stage refusal: encode: %w", err)
	}
	_, err = db.sql.ExecContext(ctx, fmt.Sprintf(upsertFailures,
		`SELECT nullif($1::bigint, 0), $2::bigint, $3::text, $4::text, $5::jsonb, NULL::bigint, NULL::bigint, 1::bigint`),
		orgID, supplierID, storable.Text(external, failureExternalMax), FailureStage, string(ej))
	if err != nil {
		return fmt.Errorf("record stage refusal: %w", err)
	}
	return nil
}

// FailureQuery selects a supplier's failure records for an organisation.
type FailureQuery struct {
	OrganisationID int64 // 0: every organisation (operators)
	SupplierID     int64
	Code, Attr     string // a field error with this code (and/or attr)
	JobID          int64
	Source         string
	Since          time.Time // last seen at or after
	Resolved       *bool
	After          int64 // cursor: records with a larger id
	Limit          int
}

// Failure is one record, as the API returns it.
type Failure struct {
	ID                    string                  `json:"id"`
	ImportSupplier        string                  `json:"import_supplier"`
	ExternalAccountNumber string                  `json:"external_account_number"`
	Source                string                  `json:"source"`
	Job                   *int64                  `json:"job"`
	Line                  *int64                  `json:"line"`
	Code                  string                  `json:"code"`
	Detail                string                  `json:"detail"`
	Errors                []dataimport.FieldError `json:"errors"`
	FirstSeen             time.Time               `json:"first_seen"`
	LastSeen              time.Time               `json:"last_seen"`
	Occurrences           int64                   `json:"occurrences"`
	ResolvedAt            *time.Time              `json:"resolved_at"`
	id                    int64
}

// Cursor is the record's position for after=.
func (f Failure) Cursor() int64 { return f.id }

// failureWhere is the WHERE clause of q and its arguments ($1 is the supplier).
func failureWhere(q FailureQuery) (string, []any) {
	where := []string{"f.supplier_id = $1"}
	args := []any{q.SupplierID}
	arg := func(v any) string { args = append(args, v); return fmt.Sprintf("$%d", len(args)) }
	if q.OrganisationID != 0 {
		where = append(where, "(f.organisation_id IS NULL OR f.organisation_id = "+arg(q.OrganisationID)+")")
	}
	if q.Code != "" || q.Attr != "" {
		// The array containment tests come first: cheap, they drop almost
		// every record that cannot match before the unnest pairs code and
		// attr (a page filtered by a rare code reads every record of the
		// supplier: 300 ms at 30,000 records without them, 40 ms with).
		cond := []string{}
		if q.Code != "" {
			p := arg(q.Code)
			where = append(where, "f.codes @> ARRAY["+p+"::text]")
			cond = append(cond, "u.c = "+p)
		}
		if q.Attr != "" {
			p := arg(q.Attr)
			where = append(where, "f.attrs @> ARRAY["+p+"::text]")
			cond = append(cond, "u.a = "+p)
		}
		where = append(where, "EXISTS (SELECT 1 FROM unnest(f.codes, f.attrs) AS u(c, a) WHERE "+strings.Join(cond, " AND ")+")")
	}
	if q.JobID != 0 {
		where = append(where, "f.job_id = "+arg(q.JobID))
	}
	if q.Source != "" {
		where = append(where, "f.source = "+arg(q.Source))
	}
	if !q.Since.IsZero() {
		where = append(where, "f.last_seen >= "+arg(q.Since))
	}
	if q.Resolved != nil {
		if *q.Resolved {
			where = append(where, "f.resolved_at IS NOT NULL")
		} else {
			where = append(where, "f.resolved_at IS NULL")
		}
	}
	return strings.Join(where, " AND "), args
}

// EachFailure streams up to q.Limit records of q in id order to fn.
func (db *DB) EachFailure(ctx context.Context, q FailureQuery, fn func(Failure) error) error {
	where, args := failureWhere(q)
	args = append(args, q.After, q.Limit)
	rows, err := db.sql.QueryContext(ctx, fmt.Sprintf(`
		SELECT f.id, s.code, f.external_account_number, f.source, f.job_id, f.line, f.error::text,
		       f.first_seen, f.last_seen, f.occurrences, f.resolved_at
		  FROM import_failures f JOIN import_suppliers s ON s.id = f.supplier_id
		 WHERE %s AND f.id > $%d ORDER BY f.id LIMIT $%d`, where, len(args)-1, len(args)), args...)
	if err != nil {
		return fmt.Errorf("failures: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var f Failure
		var ej string
		var job, line sql.NullInt64
		var resolved sql.NullTime
		if err := rows.Scan(&f.id, &f.ImportSupplier, &f.ExternalAccountNumber, &f.Source, &job, &line, &ej,
			&f.FirstSeen, &f.LastSeen, &f.Occurrences, &resolved); err != nil {
			return fmt.Errorf("failures: %w", err)
		}
		var e dataimport.Error
		if err := json.Unmarshal([]byte(ej), &e); err != nil {
			return fmt.Errorf("failures: record %d: %w", f.id, err)
		}
		f.ID = fmt.Sprint(f.id)
		f.Code, f.Detail, f.Errors = e.Code, e.Detail, e.Errors
		if f.Errors == nil {
			f.Errors = []dataimport.FieldError{}
		}
		if job.Valid {
			f.Job = &job.Int64
		}
		if line.Valid {
			f.Line = &line.Int64
		}
		if resolved.Valid {
			t := resolved.Time
			f.ResolvedAt = &t
		}
		f.FirstSeen, f.LastSeen = f.FirstSeen.UTC(), f.LastSeen.UTC()
		if err := fn(f); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("failures: %w", err)
	}
	return nil
}

// FailureCount is one (code, attr) of a summary: how many records have a
// field error with it, unresolved and resolved, and one account that does.
type FailureCount struct {
	Code       string `json:"code"`
	Attr       string `json:"attr"`
	Unresolved int64  `json:"unresolved"`
	Resolved   int64  `json:"resolved"`
	Example    string `json:"example_external_account_number"`
}

// FailureSummary counts q's records per (code, attr) of their field
// errors, most unresolved first. Only the supplier, organisation and job
// of q apply.
func (db *DB) FailureSummary(ctx context.Context, q FailureQuery) ([]FailureCount, error) {
	where, args := failureWhere(FailureQuery{OrganisationID: q.OrganisationID, SupplierID: q.SupplierID, JobID: q.JobID})
	// Records are grouped by their whole (codes, attrs) first (few distinct
	// combinations), and only those groups are unnested: unnesting every
	// record was three times slower at 30,000 records.
	rows, err := db.sql.QueryContext(ctx, fmt.Sprintf(`
		WITH g AS (
			SELECT f.codes, f.attrs, count(*) FILTER (WHERE f.resolved_at IS NULL) AS unresolved,
			       count(*) FILTER (WHERE f.resolved_at IS NOT NULL) AS resolved, min(f.external_account_number) AS example
			  FROM import_failures f WHERE %s GROUP BY f.codes, f.attrs)
		SELECT u.c, u.a, sum(g.unresolved)::bigint, sum(g.resolved)::bigint, min(g.example)
		  FROM g CROSS JOIN LATERAL (SELECT DISTINCT c, a FROM unnest(g.codes, g.attrs) AS x(c, a)) u
		 GROUP BY u.c, u.a ORDER BY 3 DESC, 4 DESC, 1, 2`, where), args...)
	if err != nil {
		return nil, fmt.Errorf("failure summary: %w", err)
	}
	defer rows.Close()
	out := []FailureCount{}
	for rows.Next() {
		var c FailureCount
		if err := rows.Scan(&c.Code, &c.Attr, &c.Unresolved, &c.Resolved, &c.Example); err != nil {
			return nil, fmt.Errorf("failure summary: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("failure summary: %w", err)
	}
	return out, nil
}
