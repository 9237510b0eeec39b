package dataimport

import (
	"fmt"
	"slices"
)

// Re-running a job's lines (CONTRACT §13): corrected accounts sent to
// POST /jobs/<id>/lines/ replace the outcome of their line when it is
// invalid or failed; the line's earlier outcomes are kept as its history.

// RerunnableOutcomes are the line outcomes a corrected account replaces.
var RerunnableOutcomes = []string{OutcomeInvalid, OutcomeFailed}

// Answers to the lines of a re-run. A line that is accepted replaces its
// job line's outcome; every other answer changes nothing. already_imported
// and duplicate_line are the job outcomes of the same name, applied to a
// corrected line.
const (
	RerunAccepted        = "accepted"
	RerunNotInJob        = "not_in_job"    // no line of the job has this external_account_number
	RerunNotRetryable    = "not_retryable" // the job's line is neither invalid nor failed (e.g. pending, staged, cancelled)
	RerunAlreadyImported = OutcomeAlreadyImported
	RerunDuplicateLine   = OutcomeDuplicateLine // a later line of the same body corrects the same account
	RerunInvalid         = OutcomeInvalid       // the corrected account is itself invalid
)

// RerunAnswers lists every answer to a re-run's line, in the order they
// are counted.
var RerunAnswers = []string{RerunAccepted, RerunInvalid, RerunNotInJob, RerunNotRetryable, RerunAlreadyImported, RerunDuplicateLine}

// RerunAnswer decides what a corrected account does to the job, from the
// job's latest line with its external_account_number (found false: none)
// and whether the account was created (by this job or any other path).
// The store applies the same rule in SQL over a whole body
// (postgres.ApplyJobCorrections); a test holds the two together.
func RerunAnswer(found bool, lineOutcome string, imported, laterInBody bool) string {
	switch {
	case laterInBody:
		return RerunDuplicateLine
	case !found:
		return RerunNotInJob
	case imported || lineOutcome == OutcomeCreated || lineOutcome == OutcomeAlreadyImported:
		return RerunAlreadyImported
	case !slices.Contains(RerunnableOutcomes, lineOutcome):
		return RerunNotRetryable
	}
	return RerunAccepted
}

// CodeJobNotRerunnable refuses a re-run of a job that is not PROCESSING
// or COMPLETED (409).
const CodeJobNotRerunnable = "job_not_rerunnable"

// JobNotRerunnable is that refusal.
func JobNotRerunnable(s JobState) *Error {
	return &Error{Code: CodeJobNotRerunnable, Detail: fmt.Sprintf(
		"This job is %s: only the lines of a PROCESSING or COMPLETED job can be sent again. Upload the corrected accounts as a new job.", s)}
}

// JobRerunnable reports whether corrected lines may be sent to a job in state s.
func JobRerunnable(s JobState) bool { return s == JobProcessing || s == JobCompleted }

// JobLineHistory is one earlier outcome of a job line that a corrected
// account replaced.
type JobLineHistory struct {
	Outcome string       `json:"outcome"`
	Errors  []FieldError `json:"errors"`
	Code    string       `json:"code,omitempty"`
	Detail  string       `json:"detail,omitempty"`
	At      DateTime     `json:"at"`
}
