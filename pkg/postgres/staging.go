package postgres

import (
	"context"
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
// staged data. One statement does both inserts, so a version is never half
// written; the conditional upsert refuses accounts that are imported, being
// imported or marked skipped, which the unique (supplier, external) key makes
// race-free.
func (db *DB) Stage(ctx context.Context, supplier dataimport.Supplier, external string, payload []byte) (StageResult, error) {
	var out []struct {
		ProcessID int64
		Version   int
	}
	err := db.gorm.WithContext(ctx).Raw(`
		WITH p AS (
			INSERT INTO import_processes (supplier_id, external_account_number, staged_version)
			VALUES (?, ?, 1)
			ON CONFLICT (supplier_id, external_account_number) DO UPDATE
			   SET staged_version = import_processes.staged_version + 1, modified_at = now()
			 WHERE import_processes.status = 'UNKNOWN' AND NOT import_processes.skipped
			RETURNING id, staged_version
		)
		INSERT INTO import_process_versions (process_id, version, payload)
		SELECT id, staged_version, ?::jsonb FROM p
		RETURNING process_id, version`, supplier.ID, external, string(payload)).Scan(&out).Error
	if err != nil {
		return StageResult{}, fmt.Errorf("stage %s/%s: %w", supplier.Code, external, err)
	}
	if len(out) == 1 {
		return StageResult{ProcessID: out[0].ProcessID, Version: out[0].Version, Created: out[0].Version == 1}, nil
	}
	// Refused: say why.
	p, err := db.Process(ctx, supplier.ID, external)
	if err != nil {
		return StageResult{}, err
	}
	return StageResult{}, refusal(p)
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
