package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Reads of one failure record and the payload it was about, for the
// operator console's drill-down.

// ErrFailureNotFound: no record with that id for that supplier.
var ErrFailureNotFound = errors.New("no such failure record")

// FailureByID is the supplier's record id (an index probe on
// import_failures_supplier_idx: the first record after id-1).
func (db *DB) FailureByID(ctx context.Context, supplierID, id int64) (Failure, error) {
	var found Failure
	err := db.EachFailure(ctx, FailureQuery{SupplierID: supplierID, After: id - 1, Limit: 1}, func(f Failure) error {
		found = f
		return nil
	})
	if err != nil {
		return Failure{}, err
	}
	if found.id != id {
		return Failure{}, ErrFailureNotFound
	}
	return found, nil
}

// FailurePayload is the payload a failure record was about, as the
// service holds it. Payload is nil when none is kept; Missing then says why.
type FailurePayload struct {
	Payload []byte
	From    string // where it came from: "job 7, line 12", "staged version 3"
	Missing string
}

// PayloadOfFailure finds the payload f was about: a job line's payload as
// uploaded (an invalid line keeps its text, bounded), or the account's
// staged version a creation used. A stage refusal keeps no payload: the
// refused data was never stored.
func (db *DB) PayloadOfFailure(ctx context.Context, supplierID int64, f Failure) (FailurePayload, error) {
	if f.Source == FailureJobLine || (f.Source == FailureCreate && f.Job != nil && f.Line != nil) {
		if f.Job == nil || f.Line == nil {
			return FailurePayload{Missing: "The job this line belonged to has been deleted."}, nil
		}
		var payload sql.NullString
		var compacted bool
		err := db.sql.QueryRowContext(ctx, `SELECT r.payload, j.compacted_at IS NOT NULL FROM import_job_records r JOIN import_jobs j ON j.id = r.job_id
			WHERE r.job_id = $1 AND r.line = $2 AND j.supplier_id = $3`, *f.Job, *f.Line, supplierID).Scan(&payload, &compacted)
		from := fmt.Sprintf("job %d, line %d", *f.Job, *f.Line)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return FailurePayload{From: from, Missing: "The job's line is no longer stored."}, nil
		case err != nil:
			return FailurePayload{}, fmt.Errorf("failure payload: %w", err)
		case !payload.Valid && compacted:
			return FailurePayload{From: from, Missing: "The line's text was dropped when its job was compacted, once complete: the line's account was created."}, nil
		case !payload.Valid:
			return FailurePayload{From: from, Missing: "The line's text was not kept (a line over the length limit, or an upload from before invalid lines kept theirs)."}, nil
		}
		return FailurePayload{Payload: []byte(payload.String), From: from}, nil
	}
	if f.Source == FailureStage {
		return FailurePayload{Missing: "A refused stage request keeps only its errors, not the data that was refused. The account's page shows what is staged, if anything."}, nil
	}
	var version sql.NullInt64
	var payload sql.NullString
	var compacted bool
	err := db.sql.QueryRowContext(ctx, `SELECT v.version, v.payload::text, p.staged_figures IS NOT NULL FROM import_processes p
		LEFT JOIN import_process_versions v ON v.process_id = p.id AND v.version = p.staged_version
		WHERE p.supplier_id = $1 AND p.external_account_number = $2`, supplierID, f.ExternalAccountNumber).Scan(&version, &payload, &compacted)
	switch {
	case err == nil && !payload.Valid && compacted:
		return FailurePayload{Missing: "The account was created by a bulk job since compacted: its staged versions were dropped."}, nil
	case errors.Is(err, sql.ErrNoRows) || (err == nil && !payload.Valid):
		return FailurePayload{Missing: "The account has no staged version."}, nil
	case err != nil:
		return FailurePayload{}, fmt.Errorf("failure payload: %w", err)
	}
	return FailurePayload{Payload: []byte(payload.String), From: fmt.Sprintf("staged version %d", version.Int64)}, nil
}
