package dataimport

import (
	"fmt"
	"time"
)

// V2Status is the state of an import process as the asynchronous (v2) API
// reports it; the v1 status is derived from it (CONTRACT §8).
type V2Status string

const (
	V2Pending         V2Status = "PENDING"     // staged (and maybe scheduled), waiting for its window or a slot
	V2InProgress      V2Status = "IN_PROGRESS" // holds a slot; a worker is creating it
	V2Processed       V2Status = "PROCESSED"   // the platform account exists
	V2Errored         V2Status = "ERRORED"     // the last attempt failed; latest_error says why
	V2Cancelled       V2Status = "CANCELLED"   // a scheduled attempt was cancelled before it started
	V2DryRunSucceeded V2Status = "DRY_RUN_SUCCEEDED"
	V2DryRunErrored   V2Status = "DRY_RUN_ERRORED"
)

// V1 is the v1 status of a process in this v2 state.
func (s V2Status) V1(scheduled bool) ImportStatus {
	switch {
	case s == V2Processed:
		return StatusCompleted
	case s == V2InProgress, s == V2Pending && scheduled:
		return StatusInProgress
	}
	return StatusUnknown
}

// Event names of the process timeline (CONTRACT §8).
const (
	EventStaged          = "EVENT_ACCOUNT_IMPORT_PROCESS_STAGED"
	EventScheduled       = "EVENT_ACCOUNT_IMPORT_PROCESS_SCHEDULED"
	EventStarted         = "EVENT_ACCOUNT_IMPORT_PROCESS_STARTED"
	EventProcessed       = "EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED"
	EventErrored         = "EVENT_ACCOUNT_IMPORT_PROCESS_ERRORED"
	EventCancelled       = "EVENT_ACCOUNT_IMPORT_PROCESS_CANCELLED"
	EventDryRunSucceeded = "EVENT_ACCOUNT_IMPORT_PROCESS_DRY_RUN_SUCCEEDED"
	EventDryRunErrored   = "EVENT_ACCOUNT_IMPORT_PROCESS_DRY_RUN_ERRORED"
	EventPostImportOK    = "EVENT_POST_IMPORT_COMPLETED"
	EventPostImportError = "EVENT_POST_IMPORT_ERRORED"
)

// Error domains: where a latest_error came from.
const (
	DomainValidation = "validation"
	DomainScheduling = "scheduling"
	DomainProcessing = "processing"
	DomainVendor     = "vendor"
)

// Codes of the v2 API.
const (
	CodeProcessAlreadyImported = "account_import_process_already_imported"
	CodeProcessNotCancellable  = "import_process_not_cancellable"
	CodeScheduleWindowExpired  = "schedule_window_expired"
	CodeProcessCancelled       = "import_process_cancelled"
	CodeWindowStartInPast      = "schedule_window_start_in_past"
	CodeWindowEndBeforeStart   = "schedule_window_end_before_start"
	CodeWindowEndTooFarAhead   = "schedule_window_end_too_far_ahead"
	CodeProcessRescheduled     = "import_process_rescheduled"
)

// Window rules (CONTRACT §8).
const (
	MaxScheduleAhead           = 4 * 24 * time.Hour
	ScheduleClockSkewAllowance = 60 * time.Second
)

// Window is when a creation may start: not before Start, not after End.
// A zero Start means as soon as possible; a zero End, no deadline.
type Window struct {
	Start, End time.Time
}

// CheckWindow applies the window rules of CONTRACT §8 at now: start not in
// the past (beyond a clock-skew allowance), end after start, end at most
// four days ahead. Errors carry the task_params attr they are about.
func CheckWindow(w Window, now time.Time) []FieldError {
	var errs []FieldError
	add := func(attr, code, detail string) {
		errs = append(errs, FieldError{Attr: "task_params." + attr, Code: code, Detail: detail})
	}
	if !w.Start.IsZero() && w.Start.Before(now.Add(-ScheduleClockSkewAllowance)) {
		add("schedule_window_start", CodeWindowStartInPast, "The schedule window may not start in the past.")
	}
	if !w.End.IsZero() {
		start := w.Start
		if start.IsZero() {
			start = now
		}
		switch {
		case !w.End.After(start):
			add("schedule_window_end", CodeWindowEndBeforeStart, "The schedule window must end after it starts.")
		case w.End.After(now.Add(MaxScheduleAhead)):
			add("schedule_window_end", CodeWindowEndTooFarAhead, "The schedule window may end at most 4 days from now.")
		}
	}
	return errs
}

// WindowExpired is the latest_error of an attempt that could not start
// before its window ended.
func WindowExpired(end time.Time) *Error {
	return &Error{Code: CodeScheduleWindowExpired, Domain: DomainScheduling,
		Detail: fmt.Sprintf("The account could not start before its schedule window ended at %s.", end.UTC().Format(time.RFC3339))}
}
