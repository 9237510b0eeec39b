package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// StageResult tells the handler whether this was the first staging (201) or
// an update (200).
type StageResult struct {
	ProcessID int64
	Version   int
	Created   bool
}

// Stage stores a validated payload as the next version of the account's
// staged data. Concurrent calls share a statement and a commit (see
// stage_batch.go); every call still gets its own outcome once committed.
func (db *DB) Stage(ctx context.Context, supplier dataimport.Supplier, external string, payload []byte) (StageResult, error) {
	out, err := db.stager.stage(ctx, stageRow{SupplierID: supplier.ID, External: external, Payload: payload})
	if err != nil {
		return StageResult{}, fmt.Errorf("stage %s/%s: %w", supplier.Code, external, err)
	}
	if out.Staged {
		return StageResult{ProcessID: out.ProcessID, Version: out.Version, Created: out.Version == 1}, nil
	}
	// Refused: say why.
	p, err := db.Process(ctx, supplier.ID, external)
	if err != nil {
		return StageResult{}, err
	}
	return StageResult{}, refusal(p)
}

// ObserveStaging tells observe the row count of every staging statement
// (for the batch-size metric). Call it before serving.
func (db *DB) ObserveStaging(observe func(rows int)) { db.stager.observe = observe }

// stageRows is the staging statement for distinct accounts: each row's
// process is inserted or its staged version bumped, and the payload stored
// under that version, all in one statement, so a version is never half
// written. The conditional upsert refuses accounts that are imported, being
// imported or marked skipped, which the unique (supplier, external) key
// makes race-free. Rows are upserted in key order, so statements running at
// once lock shared accounts in the same order and cannot deadlock.
func (db *DB) stageRows(ctx context.Context, rows []stageRow) ([]stageOutcome, error) {
	return stageRowsOn(ctx, db.sql, rows, "v1", 0)
}

// The rows of a staging statement: payloads sent with it ($3), or lines $3
// of job $6. The round holds those lines locked; were a line's text gone,
// the payload column (NOT NULL) would refuse it and the line would fail
// alone behind its savepoint.
const (
	stageInputSent     = `SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[]) AS i(supplier_id, external, payload)`
	stageInputJobLines = `SELECT i.supplier_id, i.external, r.payload
			  FROM unnest($1::bigint[], $2::text[], $3::bigint[]) AS i(supplier_id, external, line)
			  LEFT JOIN import_job_records r ON r.job_id = $6 AND r.line = i.line`
)

// querier is a *sql.DB or a *sql.Tx: bulk jobs stage inside the transaction
// that records their lines' outcomes.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// stageRowsOn is stageRows on q; api names the path in the staged event
// ("v1", or "job" for a bulk job's line).
//
// jobID other than 0 stages lines of that job (rows' Line): each payload is
// read where the upload stored it, inside the statement. Sent from the
// worker instead, every payload travelled out of Postgres and back in, and
// encoding the round's parameter arrays was a seventh of the worker's CPU.
func stageRowsOn(ctx context.Context, q querier, rows []stageRow, api string, jobID int64) ([]stageOutcome, error) {
	sups := make([]int64, len(rows))
	exts := make([]string, len(rows))
	payloads := make([]string, len(rows))
	lines := make([]int64, len(rows))
	for i, r := range rows {
		sups[i], exts[i], payloads[i], lines[i] = r.SupplierID, r.External, string(r.Payload), r.Line
	}
	input, args := stageInputSent, []any{sups, exts, payloads, dataimport.EventStaged, api}
	if jobID != 0 {
		input, args = stageInputJobLines, []any{sups, exts, lines, dataimport.EventStaged, api, jobID}
	}
	res, err := q.QueryContext(ctx, `
		WITH input AS (`+input+`
		), p AS (
			INSERT INTO import_processes (supplier_id, external_account_number, staged_version)
			SELECT supplier_id, external, 1 FROM input ORDER BY supplier_id, external
			ON CONFLICT (supplier_id, external_account_number) DO UPDATE
			   SET staged_version = import_processes.staged_version + 1, modified_at = now(),
			       v2_status = 'PENDING', scheduled = false, window_start = NULL, window_end = NULL
			 WHERE import_processes.status = 'UNKNOWN' AND NOT import_processes.skipped
			RETURNING id, supplier_id, external_account_number, staged_version
		), v AS (
			INSERT INTO import_process_versions (process_id, version, payload)
			SELECT p.id, p.staged_version, input.payload::jsonb
			  FROM p JOIN input ON input.supplier_id = p.supplier_id AND input.external = p.external_account_number
		), e AS (
			INSERT INTO import_process_events (process_id, event, data)
			SELECT p.id, $4, jsonb_build_object('version', p.staged_version, 'api', $5::text) FROM p`+resolveStaged+`
		)
		SELECT supplier_id, external_account_number, id, staged_version FROM p`, args...)
	if err != nil {
		return nil, fmt.Errorf("stage %d accounts: %w", len(rows), err)
	}
	defer res.Close()
	staged := make(map[stageKey]stageOutcome, len(rows))
	for res.Next() {
		var k stageKey
		o := stageOutcome{Staged: true}
		if err := res.Scan(&k.supplierID, &k.external, &o.ProcessID, &o.Version); err != nil {
			return nil, fmt.Errorf("stage %d accounts: %w", len(rows), err)
		}
		staged[k] = o
	}
	if err := res.Err(); err != nil {
		return nil, fmt.Errorf("stage %d accounts: %w", len(rows), err)
	}
	outs := make([]stageOutcome, len(rows))
	for i, r := range rows {
		outs[i] = staged[r.key()] // absent: refused
	}
	return outs, nil
}

// refusal explains why an account cannot be staged or created now.
func refusal(p dataimport.ImportProcess) error {
	switch {
	case p.Imported():
		return dataimport.AlreadyImported(p.ExternalAccountNumber, p.PlatformAccountNumber)
	case p.Skipped:
		return dataimport.Errorf(dataimport.CodeAccountMarkedSkipped, "Account %s is marked to be skipped.", p.ExternalAccountNumber)
	default:
		return dataimport.Errorf(dataimport.CodeImportInProgress, "Account %s is being imported; try again when its status is no longer IN_PROGRESS.", p.ExternalAccountNumber)
	}
}

// StagedVersions returns every staged payload of a process, oldest first
// (history is never lost).
func (db *DB) StagedVersions(ctx context.Context, processID int64) ([][]byte, error) {
	var rows []struct{ Payload string }
	err := db.gorm.WithContext(ctx).Raw(
		"SELECT payload::text AS payload FROM import_process_versions WHERE process_id = ? ORDER BY version", processID).
		Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("staged versions: %w", err)
	}
	out := make([][]byte, len(rows))
	for i, r := range rows {
		out[i] = []byte(r.Payload)
	}
	return out, nil
}
