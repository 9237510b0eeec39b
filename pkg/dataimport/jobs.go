package dataimport

import (
	"fmt"
	"time"
)

// JobState is where a bulk import job is (CONTRACT §11).
type JobState string

// Job states.
const (
	JobReceiving  JobState = "RECEIVING"  // the body is being uploaded; nothing is processed yet
	JobProcessing JobState = "PROCESSING" // the body is durably stored; lines are being staged and created
	JobCompleted  JobState = "COMPLETED"  // every line has its final outcome
	JobFailed     JobState = "FAILED"     // the upload was lost or refused as a whole
	JobCancelled  JobState = "CANCELLED"  // cancelled; what was created stays
)

// Finished reports whether the job will change no more.
func (s JobState) Finished() bool {
	return s == JobCompleted || s == JobFailed || s == JobCancelled
}

// Outcome of one line of a job. Pending, staged and in_progress are on the
// way; the others are final (staged is final for a job that only stages).
const (
	OutcomePending         = "pending"
	OutcomeInvalid         = "invalid"
	OutcomeDuplicateLine   = "duplicate_line"
	OutcomeStaged          = "staged"
	OutcomeInProgress      = "in_progress"
	OutcomeCreated         = "created"
	OutcomeAlreadyImported = "already_imported"
	OutcomeFailed          = "failed"
	OutcomeCancelled       = "cancelled"
)

// CodeStagedVersionReplaced is the error of a job line whose account was
// staged again (a v1 or v2 stage, or another job) between the job staging
// the line and starting its creation: the account would be created from
// another payload, so the line fails and the job does not create it.
const CodeStagedVersionReplaced = "staged_version_replaced"

// StagedVersionReplaced is that line's error.
func StagedVersionReplaced(line, now int) *Error {
	return &Error{Code: CodeStagedVersionReplaced, Domain: DomainProcessing, Detail: fmt.Sprintf(
		"This line staged version %d of the account, but version %d was staged since; the job did not create the account. Create it from its current version, or send the line again.", line, now)}
}

// JobOutcomes lists every line outcome, in the order counters are shown.
var JobOutcomes = []string{OutcomePending, OutcomeInvalid, OutcomeDuplicateLine, OutcomeStaged, OutcomeInProgress,
	OutcomeCreated, OutcomeAlreadyImported, OutcomeFailed, OutcomeCancelled}

// JobCounters counts a job's lines by outcome; Received is every line of the
// body, and the others add up to it.
type JobCounters struct {
	Received        int64 `json:"received"`
	Pending         int64 `json:"pending"`
	Invalid         int64 `json:"invalid"`
	DuplicateLine   int64 `json:"duplicate_line"`
	Staged          int64 `json:"staged"`
	InProgress      int64 `json:"in_progress"`
	Created         int64 `json:"created"`
	AlreadyImported int64 `json:"already_imported"`
	Failed          int64 `json:"failed"`
	Cancelled       int64 `json:"cancelled"`
}

// Sum is the total of the outcome counters (equal to Received once the
// body is in).
func (c JobCounters) Sum() int64 {
	return c.Pending + c.Invalid + c.DuplicateLine + c.Staged + c.InProgress + c.Created + c.AlreadyImported + c.Failed + c.Cancelled
}

// Job is a bulk import job.
type Job struct {
	ID             int64
	OrganisationID int64
	SupplierID     int64
	SupplierCode   string
	TeamID         *int64
	State          JobState
	Create         bool // false: stage only
	DryRun         bool
	WindowStart    *time.Time // creation starts no earlier (nil: at once)
	WindowEnd      *time.Time // lines not started by then fail (nil: no deadline)
	Counters       JobCounters
	Error          *Error
	BodyBytes      int64
	CreatedAt      time.Time
	ReceivedAt     *time.Time
	FinishedAt     *time.Time
	ModifiedAt     time.Time
}

// JobRecord is one line's outcome.
type JobRecord struct {
	Line                  int          `json:"line"`
	ExternalAccountNumber string       `json:"external_account_number"`
	Outcome               string       `json:"outcome"`
	PlatformAccountNumber string       `json:"platform_account_number"`
	Errors                []FieldError `json:"errors"`
	Code                  string       `json:"code,omitempty"`
	Detail                string       `json:"detail,omitempty"`
}

// Event names of a job line in the import process's log are those of the
// per-account path: jobs add none of their own.
