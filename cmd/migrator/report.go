package main

import (
	"encoding/csv"
	"fmt"
	"os"
)

// Outcomes of an account in the report.
const (
	outcomeCompleted         = "COMPLETED"
	outcomeFailed            = "FAILED"
	outcomeDryRunOK          = "DRY_RUN_OK"
	outcomeDryRunUnconfirmed = "DRY_RUN_UNCONFIRMED" // 202 then UNKNOWN: the status endpoint does not say how a dry run ended
	outcomeSkippedCompleted  = "SKIPPED_ALREADY_COMPLETED"
	outcomeInterrupted       = "INTERRUPTED" // stopped before it finished; a rerun resumes it
	outcomePostImportFailed  = "POST_IMPORT_FAILED"
)

var reportHeader = []string{"external_account_number", "outcome", "platform_account_number", "code", "attr", "detail"}

// row is one line of the report.
type row struct {
	External, Outcome, Platform, Code, Attr, Detail string
}

// reportWriter writes the CSV report as results come in, flushed after
// every account, so that even a killed run leaves what it did on disk.
type reportWriter struct {
	f *os.File
	w *csv.Writer
}

func createReport(path string) (*reportWriter, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create report: %w", err)
	}
	r := &reportWriter{f: f, w: csv.NewWriter(f)}
	if err := r.w.Write(reportHeader); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("write report: %w", err)
	}
	return r, nil
}

// write appends rows and flushes them to the file.
func (r *reportWriter) write(rows []row) error {
	for _, x := range rows {
		if err := r.w.Write([]string{x.External, x.Outcome, x.Platform, x.Code, x.Attr, x.Detail}); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	r.w.Flush()
	if err := r.w.Error(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

func (r *reportWriter) close() error {
	r.w.Flush()
	if err := r.w.Error(); err != nil {
		_ = r.f.Close()
		return fmt.Errorf("write report: %w", err)
	}
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("close report: %w", err)
	}
	return nil
}
