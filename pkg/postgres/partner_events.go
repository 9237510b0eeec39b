package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Partner events that are not about one account (CONTRACT §13, §14) are
// rows of the same event log with a supplier instead of a process
// (migration 00022): the relay numbers them, and the feed and webhooks
// read them, exactly as the account events. A job's end is written by a
// trigger on import_jobs; a supplier's events by recordSupplierEvent.

// execer is a *sql.Tx, *sql.DB or *sql.Conn.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// recordSupplierEvent writes an event about a supplier, seen by every
// organisation granted it, in the caller's transaction (so it exists only if
// the change it reports commits). data is the event's data without
// import_supplier, which the feed adds.
func recordSupplierEvent(ctx context.Context, tx execer, supplierID int64, event string, data any) error {
	if dataimport.AccountEvent(event) {
		return fmt.Errorf("record supplier event: %s is an account's event", event)
	}
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", event, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO import_process_events (supplier_id, event, data) VALUES ($1, $2, $3::jsonb)`,
		supplierID, event, string(b)); err != nil {
		return fmt.Errorf("record %s event: %w", event, err)
	}
	return nil
}

// partnerEventData is the wire data of a job's or a supplier's event: the
// data as written, with import_supplier and, for a job's end, the address
// of the job's failures summary.
func partnerEventData(event, supplier string, stored []byte) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(stored, &m); err != nil {
		return nil, fmt.Errorf("data of %s: %w", event, err)
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	put := func(k string, v any) error {
		b, err := json.Marshal(v)
		m[k] = b
		return err
	}
	if err := put("import_supplier", supplier); err != nil {
		return nil, err
	}
	if dataimport.IsJobEvent(event) {
		var id int64
		if err := json.Unmarshal(m["job_id"], &id); err != nil {
			return nil, fmt.Errorf("data of %s: job_id: %w", event, err)
		}
		if err := put("failures_summary_url", dataimport.FailuresSummaryPath(supplier, id)); err != nil {
			return nil, err
		}
		// The counters as the job's view writes them (its field order, every
		// outcome), not as the trigger's jsonb happened to order them.
		var c dataimport.JobCounters
		if err := json.Unmarshal(m["counters"], &c); err != nil {
			return nil, fmt.Errorf("data of %s: counters: %w", event, err)
		}
		if err := put("counters", c); err != nil {
			return nil, err
		}
		// The control totals as they stood, compared by the job's own rule.
		if raw, ok := m["_control"]; ok {
			ctl, result, err := jobEventControl(id, c, raw)
			if err != nil {
				return nil, fmt.Errorf("data of %s: %w", event, err)
			}
			delete(m, "_control")
			if err := put("control", ctl); err != nil {
				return nil, err
			}
			if err := put("reconciliation", result); err != nil {
				return nil, err
			}
		}
	}
	return json.Marshal(m)
}

// jobEventControl is a job's control totals from the figures its end
// event kept (migration 00029).
func jobEventControl(jobID int64, c dataimport.JobCounters, raw json.RawMessage) ([]dataimport.ControlTotal, string, error) {
	var f struct {
		Create                      bool                       `json:"create"`
		DryRun                      bool                       `json:"dry_run"`
		Declared                    dataimport.ControlDeclared `json:"declared"`
		ReceivedTransferBalance     decimal.Decimal            `json:"received_transfer_balance"`
		ReceivedOpeningTransactions decimal.Decimal            `json:"received_opening_transactions"`
		ReceivedMeterPoints         int64                      `json:"received_meter_points"`
		CreatedTransferBalance      decimal.Decimal            `json:"created_transfer_balance"`
		CreatedOpeningTransactions  decimal.Decimal            `json:"created_opening_transactions"`
		CreatedMeterPoints          int64                      `json:"created_meter_points"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, "", fmt.Errorf("control totals of job %d: %w", jobID, err)
	}
	j := dataimport.Job{ID: jobID, State: dataimport.JobCompleted, Create: f.Create, DryRun: f.DryRun, Counters: c,
		Control: dataimport.JobControl{Declared: f.Declared,
			Received: dataimport.ControlFigures{TransferBalance: f.ReceivedTransferBalance,
				OpeningTransactions: f.ReceivedOpeningTransactions, MeterPoints: f.ReceivedMeterPoints},
			Created: dataimport.ControlFigures{TransferBalance: f.CreatedTransferBalance,
				OpeningTransactions: f.CreatedOpeningTransactions, MeterPoints: f.CreatedMeterPoints}}}
	j.CountAccounts()
	ctl, result := j.Totals()
	return ctl, result, nil
}
