package dataimport

import (
	"fmt"
	"time"
)

// Re-running a job's failed creations (CONTRACT §13, POST /jobs/<id>/retry/):
// the lines go back to their staged payloads and through the job's own
// pipeline again, once what made them fail was fixed elsewhere.

// CodeJobNotRetryable answers a retry that the job's state forbids (409).
const CodeJobNotRetryable = "job_not_retryable"

// CodeAccountNotRetryable answers an operator's retry of an account that
// has no failed creation to re-run (imported, skipped, in progress, never
// staged, or its last attempt did not fail).
const CodeAccountNotRetryable = "account_not_retryable"

// CodeAccountNotSkipped answers an operator's unskip of an account that is
// not marked skipped.
const CodeAccountNotSkipped = "account_not_skipped"

// CodeJobNotCancellable answers an operator's cancel of a job that has
// already finished (the partner's cancel answers such a job as it is).
const CodeJobNotCancellable = "job_not_cancellable"

// JobRetryRefusal says why a job's failed lines cannot be re-run now; nil
// when they can. Only a job whose lines are its own to run again may: a
// job still receiving has no final lines yet, a cancelled one was stopped
// by its owner, a failed one kept no lines, and once a schedule window has
// ended no line of the job may start (it would expire again at once).
func JobRetryRefusal(state JobState, windowEnd *time.Time, now time.Time) *Error {
	switch state {
	case JobProcessing, JobCompleted:
	case JobReceiving:
		return Errorf(CodeJobNotRetryable, "The job is still RECEIVING its upload; retry its failed lines once it is PROCESSING or COMPLETED.")
	case JobCancelled:
		return Errorf(CodeJobNotRetryable, "The job was CANCELLED; its lines are not run again. Send the accounts in a new job.")
	case JobFailed:
		return Errorf(CodeJobNotRetryable, "The job FAILED as a whole and kept no lines to run again. Send the upload again.")
	default:
		return Errorf(CodeJobNotRetryable, "The job is %s; its lines cannot be run again.", state)
	}
	if windowEnd != nil && !now.Before(*windowEnd) {
		return Errorf(CodeJobNotRetryable, "The job's schedule window ended at %s; its lines can no longer start. Send the accounts in a new job.",
			windowEnd.UTC().Format(time.RFC3339))
	}
	return nil
}

// JobRetried is the answer to a retry: how many failed lines went back to
// be run again.
type JobRetried struct {
	Retried int `json:"retried"`
}

// String is for operators' output.
func (r JobRetried) String() string { return fmt.Sprintf("%d failed creations re-run", r.Retried) }
