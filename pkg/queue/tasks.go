// Package queue is the transport between the API and the workers: asynq
// task types and payloads, enqueueing, the cluster-wide concurrency
// semaphore and the outcome notifier. Redis carries work; Postgres keeps the
// truth, so anything lost here is found again from the database.
package queue

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"
)

// Queue names. Creation is what partners wait on, so it gets most of the
// workers' attention; e-mails can lag.
const (
	QueueAccounts = "accounts"
	QueueEmails   = "emails"
	// QueueWebhooks is served by a separate asynq server in the worker
	// (WEBHOOK_CONCURRENCY), so slow receivers never hold creation workers.
	QueueWebhooks = "webhooks"
)

// Task types.
const (
	TypeCreateAccount   = "account:create"
	TypeWelcomeEmail    = "account:welcome_email"
	TypeWebhookDelivery = "webhook:deliver"
)

// CreateAccount is the payload of one account-creation attempt.
type CreateAccount struct {
	ProcessID             int64  `json:"process_id"`
	SupplierID            int64  `json:"supplier_id"`
	ExternalAccountNumber string `json:"external_account_number"`
	Attempt               int    `json:"attempt"`
	DryRun                bool   `json:"dry_run"`
	// OrganisationID is the organisation the attempt runs for (0: not
	// known), whose cap its slot counts against.
	OrganisationID int64 `json:"organisation_id,omitempty"`
	// NotBefore is the start of a v2 schedule window: asynq holds the task
	// until then (ProcessAt). Zero: as soon as possible.
	NotBefore time.Time `json:"not_before,omitzero"`
}

// TaskID is deterministic per attempt, so a second request or a reconciler
// re-enqueue never makes a second job for the same attempt, while a later
// attempt (after a failure) is not blocked by the archived earlier one.
func (p CreateAccount) TaskID() string {
	return "create:" + strconv.FormatInt(p.ProcessID, 10) + ":" + strconv.Itoa(p.Attempt)
}

// SlotHolder names the concurrency slot this attempt holds while in progress.
func (p CreateAccount) SlotHolder() string { return SlotHolder(p.ProcessID, p.Attempt) }

// Owner is whose work the attempt's slot is.
func (p CreateAccount) Owner() Owner {
	return Owner{Supplier: p.SupplierID, Organisation: p.OrganisationID}
}

// SlotHolder is the semaphore member of one attempt of a process. A slot
// belongs to one attempt, so whoever ends or sweeps an old attempt can never
// free the slot a newer attempt of the same account holds.
func SlotHolder(processID int64, attempt int) string {
	return "process:" + strconv.FormatInt(processID, 10) + ":" + strconv.Itoa(attempt)
}

// SlotRef is the attempt a slot belongs to. Attempt 0 is a holder named
// before slots carried their attempt ("process:<id>"): it belongs to
// whatever attempt of the process is running.
type SlotRef struct {
	ProcessID int64
	Attempt   int
}

// HolderRef is the inverse of SlotHolder.
func HolderRef(holder string) (SlotRef, bool) {
	rest, ok := strings.CutPrefix(holder, "process:")
	if !ok {
		return SlotRef{}, false
	}
	idPart, attemptPart, hasAttempt := strings.Cut(rest, ":")
	id, err := strconv.ParseInt(idPart, 10, 64)
	if err != nil {
		return SlotRef{}, false
	}
	if !hasAttempt {
		return SlotRef{ProcessID: id}, true
	}
	attempt, err := strconv.Atoi(attemptPart)
	if err != nil || attempt <= 0 {
		return SlotRef{}, false
	}
	return SlotRef{ProcessID: id, Attempt: attempt}, true
}

// Task builds the asynq task.
func (p CreateAccount) Task() (*asynq.Task, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", TypeCreateAccount, err)
	}
	opts := []asynq.Option{asynq.TaskID(p.TaskID()), asynq.Queue(QueueAccounts), asynq.MaxRetry(10)}
	if !p.NotBefore.IsZero() {
		opts = append(opts, asynq.ProcessAt(p.NotBefore))
	}
	return asynq.NewTask(TypeCreateAccount, b, opts...), nil
}

// WelcomeEmail is the payload of one welcome e-mail (one per customer).
type WelcomeEmail struct {
	EmailID int64 `json:"email_id"`
}

// Task builds the asynq task.
func (p WelcomeEmail) Task() (*asynq.Task, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", TypeWelcomeEmail, err)
	}
	return asynq.NewTask(TypeWelcomeEmail, b, asynq.TaskID("welcome:"+strconv.FormatInt(p.EmailID, 10)),
		asynq.Queue(QueueEmails), asynq.MaxRetry(20)), nil
}

// Decode unmarshals a task payload into v.
func Decode(t *asynq.Task, v any) error {
	if err := json.Unmarshal(t.Payload(), v); err != nil {
		return fmt.Errorf("decode %s payload: %w: %w", t.Type(), err, asynq.SkipRetry)
	}
	return nil
}

// WebhookDelivery is the payload of one webhook attempt: the delivery and
// the attempt count and due time Postgres had when it was scheduled. The
// schedule itself lives in Postgres (webhook_deliveries.next_attempt_at);
// this task is only the wake-up, and the reconciler makes it again from the
// row if Redis loses it.
type WebhookDelivery struct {
	DeliveryID int64 `json:"delivery_id"`
	EndpointID int64 `json:"endpoint_id"` // for the per-endpoint in-flight bound, taken before anything else
	Attempts   int   `json:"attempts"`
	DueAtMicro int64 `json:"due_at_us"`
}

// TaskID names the attempt: the same row state always gives the same id,
// so the dispatcher, the previous attempt and the reconciler never make two
// tasks for one attempt; a replay (attempts back to 0, due now) gets a new one.
func (p WebhookDelivery) TaskID() string {
	return "webhook:" + strconv.FormatInt(p.DeliveryID, 10) + ":" + strconv.Itoa(p.Attempts) + ":" + strconv.FormatInt(p.DueAtMicro, 10)
}

// Task builds the asynq task, held until the attempt is due. Retries of the
// task itself are only for "endpoint busy" and database errors: a failed
// HTTP attempt is settled in Postgres and scheduled as a new task.
func (p WebhookDelivery) Task() (*asynq.Task, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", TypeWebhookDelivery, err)
	}
	opts := []asynq.Option{asynq.TaskID(p.TaskID()), asynq.Queue(QueueWebhooks), asynq.MaxRetry(1 << 20),
		asynq.Timeout(time.Minute)}
	if due := time.UnixMicro(p.DueAtMicro); time.Until(due) > 0 {
		opts = append(opts, asynq.ProcessAt(due))
	}
	return asynq.NewTask(TypeWebhookDelivery, b, opts...), nil
}

// TypeBulkJob drives one bulk import job (CONTRACT §11).
const TypeBulkJob = "job:process"

// BulkJob is the wake-up of a bulk import job. The job's progress lives in
// Postgres; the task only says "work on it". Epoch names the task: a new
// one is made when a worker yields the job or its lease lapses, so a task
// asynq still holds for a dead worker never blocks the job.
type BulkJob struct {
	JobID int64 `json:"job_id"`
	Epoch int   `json:"epoch"`
	// NotBefore holds the task until the job's schedule window opens.
	NotBefore time.Time `json:"not_before,omitzero"`
}

// TaskID is deterministic per (job, epoch).
func (p BulkJob) TaskID() string {
	return "job:" + strconv.FormatInt(p.JobID, 10) + ":" + strconv.Itoa(p.Epoch)
}

// Task builds the asynq task. A run works for a bounded slice of time and
// then hands over to the next epoch's task, well inside the timeout.
func (p BulkJob) Task() (*asynq.Task, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", TypeBulkJob, err)
	}
	opts := []asynq.Option{asynq.TaskID(p.TaskID()), asynq.Queue(QueueAccounts), asynq.MaxRetry(1 << 20), asynq.Timeout(15 * time.Minute)}
	if !p.NotBefore.IsZero() {
		opts = append(opts, asynq.ProcessAt(p.NotBefore))
	}
	return asynq.NewTask(TypeBulkJob, b, opts...), nil
}
