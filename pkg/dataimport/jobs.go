package dataimport

import (
	"fmt"
	"slices"
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

// JobStates lists every job state. A test walks the state constants of
// this file, so a state added above and missing here (or missing from the
// retry table, DecideJobRetry) fails it.
var JobStates = []JobState{JobReceiving, JobProcessing, JobCompleted, JobFailed, JobCancelled}

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
	Control        JobControl // control totals (CONTRACT §14)
	Error          *Error
	BodyBytes      int64
	CreatedAt      time.Time
	ReceivedAt     *time.Time
	FinishedAt     *time.Time
	ModifiedAt     time.Time
	// CompactedAt is when the job was last compacted (what its created
	// lines were sent as dropped, pkg/postgres/job_compact.go); nil: never,
	// or not since it last completed. Operators' views only.
	CompactedAt *time.Time
	// Held says why no creation of the job starts now (HeldSupplierPaused),
	// "" when none is held.
	Held string
}

// JobControl is what a job declared, received and created (control.go).
type JobControl struct {
	Declared          ControlDeclared
	Received, Created ControlFigures
}

// CountAccounts sets the control figures' accounts from the counters:
// every valid line that no later line replaced was received; created is
// the created lines.
func (j *Job) CountAccounts() {
	j.Control.Received.Accounts = j.Counters.Received - j.Counters.Invalid - j.Counters.DuplicateLine
	j.Control.Created.Accounts = j.Counters.Created
}

// Totals compares them: created counts only for a job that creates
// accounts for real, and only once it is finished.
func (j *Job) Totals() ([]ControlTotal, string) {
	var created *ControlFigures
	if j.Create && !j.DryRun {
		created = &j.Control.Created
	}
	return Reconcile(j.Control.Declared, j.Control.Received, created, j.State.Finished())
}

// JobRecord is one line's outcome.
type JobRecord struct {
	Line                  int          `json:"line"`
	ExternalAccountNumber string       `json:"external_account_number"`
	Outcome               string       `json:"outcome"`
	PlatformAccountNumber *string      `json:"platform_account_number"` // null until created
	Errors                []FieldError `json:"errors"`
	Code                  string       `json:"code,omitempty"`
	Detail                string       `json:"detail,omitempty"`
	// History is the line's earlier outcomes, oldest first, when corrected
	// accounts were sent for it (POST /jobs/<id>/lines/); empty otherwise.
	History []JobLineHistory `json:"history"`
}

// Event names of a job line in the import process's log are those of the
// per-account path: jobs add none of their own.

// CodeUploadLost fails a job whose upload stopped before the whole body was
// received (the client hung up, the connection was cut, the API process
// died). Nothing of the body was kept; a retry with the same
// Idempotency-Key and the same body resumes it.
const CodeUploadLost = "upload_lost"

// ResumableJobFailure reports whether a job failed with code kept nothing
// of its body for a reason of the transport or of the service, not of the
// body: a retry with the same Idempotency-Key receives the job again. A body
// refused as such (too large, not gzip, cut inside its gzip) fails the same
// way when sent again, so that failure is replayed instead.
func ResumableJobFailure(code string) bool {
	return slices.Contains(ResumableJobFailures, code)
}

// ResumableJobFailures are the failure codes of ResumableJobFailure.
var ResumableJobFailures = []string{CodeUploadLost, CodeUploadIdleTimeout, CodeServerError}

// CodeUploadIdleTimeout fails a job whose upload sent no body bytes for
// UPLOAD_IDLE_TIMEOUT: like a lost upload, resumable with the same key.
const CodeUploadIdleTimeout = "upload_idle_timeout"

// KeyedJob is the job an upload's Idempotency-Key already names (within
// the key's lifetime), as a retry finds it.
type KeyedJob struct {
	State JobState
	// Stale: RECEIVING, and its upload's heartbeat stopped.
	Stale bool
	// ErrorCode is a FAILED job's error code.
	ErrorCode string
	// HasDigest: the whole body was received and its digest kept (a job
	// failed or cancelled while receiving has none).
	HasDigest bool
}

// BodyMatch is how a retry's body compares with the job's.
type BodyMatch int

// Body comparisons.
const (
	BodyUnread BodyMatch = iota // not read yet: DecideJobRetry may ask for it (RetryReadBody)
	BodySame
	BodyOther
)

// RetryDecision is the answer to an upload retried with a key that names a job.
type RetryDecision int

// Retry decisions.
const (
	RetryReadBody      RetryDecision = iota // read the body through and decide again with its match
	RetryOtherRequest                       // 422 idempotency_key_reused: other options
	RetryOtherBody                          // 422 idempotency_key_reused: another body
	RetryReplay                             // 202 with the job, Idempotent-Replayed
	RetryReplayFailure                      // the job's own refusal again, Idempotent-Replayed
	RetryInUse                              // 409 idempotency_key_in_use: its upload is alive
	RetryTakeOver                           // receive the body into the job again (next receive epoch)
)

func (d RetryDecision) String() string {
	return [...]string{"read_body", "other_request", "other_body", "replay", "replay_failure", "in_use", "take_over"}[d]
}

// DecideJobRetry is the idempotent-retry state machine of a job upload:
// what a retry with the same Idempotency-Key gets, for every job state.
// The body is compared only where the job kept a digest to compare with;
// there, with body BodyUnread, the answer is RetryReadBody.
//
//   - other options: 422, whatever the state;
//   - RECEIVING: 409 while its upload is alive, taken over once it stopped;
//   - PROCESSING, COMPLETED: replayed with the same body, 422 with another;
//   - FAILED with a failure of the transport or the service (upload_lost,
//     server_error): taken over, whatever the body (none was kept);
//   - FAILED with the body refused: that refusal again;
//   - CANCELLED: replayed (422 with another body, when it has a digest).
func DecideJobRetry(k KeyedJob, sameOptions bool, body BodyMatch) RetryDecision {
	if !sameOptions {
		return RetryOtherRequest
	}
	compare := func() RetryDecision {
		switch body {
		case BodySame:
			return RetryReplay
		case BodyOther:
			return RetryOtherBody
		}
		return RetryReadBody
	}
	switch k.State {
	case JobReceiving:
		if k.Stale {
			return RetryTakeOver
		}
		return RetryInUse
	case JobProcessing, JobCompleted:
		return compare()
	case JobFailed:
		if ResumableJobFailure(k.ErrorCode) {
			return RetryTakeOver
		}
		return RetryReplayFailure
	case JobCancelled:
		if k.HasDigest {
			return compare()
		}
		return RetryReplay
	}
	// A state this function does not know: refuse rather than guess (the
	// table test fails first).
	return RetryOtherRequest
}
