package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// ScheduleInput is a v2 create: a validated payload to stage as the next
// version and the attempt to schedule for it.
type ScheduleInput struct {
	Supplier dataimport.Supplier
	External string
	Payload  []byte
	DryRun   bool
	Window   dataimport.Window
	// Organisation is the requesting organisation: the attempt's slot
	// counts against its cap.
	Organisation int64
}

// Scheduled is what ScheduleV2 did.
type Scheduled struct {
	Process  dataimport.ImportProcess // after the change
	Replaced int                      // the pending attempt this one replaced; 0 if none
}

// ScheduleV2 stages the payload and schedules a creation attempt for it, in
// one transaction: the process is PENDING (v1: IN_PROGRESS) until a worker
// starts it. A process still PENDING (not started) has its payload, window
// and attempt replaced; one being created, imported or skipped is refused.
func (db *DB) ScheduleV2(ctx context.Context, in ScheduleInput) (Scheduled, error) {
	var out Scheduled
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Exec(`INSERT INTO import_processes (supplier_id, external_account_number) VALUES (?, ?)
			ON CONFLICT (supplier_id, external_account_number) DO NOTHING`, in.Supplier.ID, in.External).Error
		if err != nil {
			return fmt.Errorf("schedule: %w", err)
		}
		var row processRow
		err = tx.Clauses(clause.Locking{Strength: "UPDATE"}).
			Where("supplier_id = ? AND external_account_number = ?", in.Supplier.ID, in.External).Take(&row).Error
		if err != nil {
			return fmt.Errorf("schedule: lock process: %w", err)
		}
		cur := row.domain()
		switch {
		case cur.Imported():
			return dataimport.ProcessAlreadyImported(cur.ExternalAccountNumber, cur.PlatformAccountNumber)
		case cur.Skipped:
			return refusal(cur)
		case cur.V2Status == dataimport.V2InProgress:
			return refusal(cur)
		case cur.V2Status == dataimport.V2Pending && cur.Scheduled:
			out.Replaced = cur.Attempt
			err := tx.Exec(`INSERT INTO import_attempts (process_id, attempt, outcome, error) VALUES (?, ?, 'CANCELLED', ?::jsonb)
				ON CONFLICT (process_id, attempt) DO NOTHING`, cur.ID, cur.Attempt, replacedErrorJSON).Error
			if err != nil {
				return fmt.Errorf("schedule: end replaced attempt: %w", err)
			}
		}
		var upd []processRow
		err = tx.Raw(`UPDATE import_processes
			   SET staged_version = staged_version + 1, attempt = attempt + 1, status = 'IN_PROGRESS', v2_status = 'PENDING',
			       scheduled = true, window_start = ?, window_end = ?, dry_run = ?, attempt_organisation_id = nullif(?, 0), job_attempt = false, modified_at = now()
			 WHERE id = ? RETURNING *`, nullTime(in.Window.Start), nullTime(in.Window.End), in.DryRun, in.Organisation, cur.ID).Scan(&upd).Error
		if err != nil {
			return fmt.Errorf("schedule: %w", err)
		}
		out.Process = upd[0].domain()
		p := out.Process
		if err := tx.Exec(`INSERT INTO import_process_versions (process_id, version, payload) VALUES (?, ?, ?::jsonb)`,
			p.ID, p.StagedVersion, string(in.Payload)).Error; err != nil {
			return fmt.Errorf("schedule: store version: %w", err)
		}
		if err := recordEvent(tx, p.ID, dataimport.EventStaged, map[string]any{"version": p.StagedVersion, "api": "v2"}); err != nil {
			return err
		}
		return recordEvent(tx, p.ID, dataimport.EventScheduled, map[string]any{"attempt": p.Attempt, "dry_run": in.DryRun, "api": "v2",
			"schedule_window_start": p.WindowStart, "schedule_window_end": p.WindowEnd, "replaced_attempt": out.Replaced})
	})
	return out, err
}

// replacedError ends an attempt that a newer v2 create replaced before it started.
var replacedError = &dataimport.Error{Code: dataimport.CodeProcessRescheduled, Domain: dataimport.DomainScheduling,
	Detail: "A newer request replaced this attempt before it started; follow the account's status."}

var replacedErrorJSON = func() string {
	b, _ := json.Marshal(replacedError)
	return string(b)
}()

// ClaimStart moves a scheduled attempt from PENDING to IN_PROGRESS: the
// worker holds the attempt's slot and is about to create the account. It is
// false when the attempt is no longer the one pending (cancelled, replaced,
// expired) or already started (a retried job); ErrSupplierNotOngoing when
// it is pending but its supplier is Paused or Complete (decided with the
// supplier row locked, see hold.go).
func (db *DB) ClaimStart(ctx context.Context, processID int64, attempt int) (bool, error) {
	claimed := false
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var status []string
		if err := tx.Raw(`SELECT s.status FROM import_suppliers s JOIN import_processes p ON p.supplier_id = s.id
			WHERE p.id = ? FOR KEY SHARE OF s`, processID).Scan(&status).Error; err != nil {
			return fmt.Errorf("claim start: %w", err)
		}
		if len(status) == 1 && status[0] != string(dataimport.SupplierOngoing) {
			return ErrSupplierNotOngoing
		}
		res := tx.Exec(`UPDATE import_processes SET v2_status = 'IN_PROGRESS', modified_at = now()
			 WHERE id = ? AND attempt = ? AND v2_status = 'PENDING' AND scheduled`, processID, attempt)
		if res.Error != nil {
			return fmt.Errorf("claim start: %w", res.Error)
		}
		if claimed = res.RowsAffected == 1; !claimed {
			return nil
		}
		return recordEvent(tx, processID, dataimport.EventStarted, map[string]any{"attempt": attempt})
	})
	return claimed, err
}

// ErrNotCancellable is returned by Cancel for a process that is not waiting
// to start; the process tells its status.
var ErrNotCancellable = errors.New("import process is not cancellable")

// Cancel ends a scheduled attempt that has not started: it is CANCELLED and
// will never take a slot. Cancelling a cancelled process again is a no-op.
// Anything else is ErrNotCancellable. It returns the process as it is now.
func (db *DB) Cancel(ctx context.Context, p dataimport.ImportProcess) (dataimport.ImportProcess, error) {
	switch {
	case p.V2Status == dataimport.V2Cancelled:
		return p, nil
	case p.V2Status != dataimport.V2Pending || !p.Scheduled:
		return p, ErrNotCancellable
	}
	cancelled := &dataimport.Error{Code: dataimport.CodeProcessCancelled, Domain: dataimport.DomainScheduling,
		Detail: "The scheduled creation was cancelled before it started."}
	if err := db.FinishAttempt(ctx, p.ID, p.Attempt, OutcomeCancelled, cancelled); err != nil {
		return p, err
	}
	now, err := db.Process(ctx, p.SupplierID, p.ExternalAccountNumber)
	if err != nil {
		return p, err
	}
	if now.V2Status != dataimport.V2Cancelled {
		// It started (or changed) between our read and the update.
		return now, ErrNotCancellable
	}
	return now, nil
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
