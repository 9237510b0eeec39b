package dataimport

import (
	"net/url"
	"strconv"
)

// Events that are not about one account's import process (CONTRACT §13,
// §14). They share the event log, and so the feed and webhooks, with the
// account events; their data is their own.
const (
	EventJobCompleted   = "JOB_COMPLETED"
	EventJobFailed      = "JOB_FAILED"
	EventJobCancelled   = "JOB_CANCELLED"
	EventSupplierPaused = "SUPPLIER_PAUSED"
)

// partnerEventTypes are the published names of those events.
var partnerEventTypes = map[string]string{
	EventJobCompleted:   "job.completed-v1",
	EventJobFailed:      "job.failed-v1",
	EventJobCancelled:   "job.cancelled-v1",
	EventSupplierPaused: "supplier.paused-v1",
}

// AccountEvent reports whether a published event is about one account's
// import process (its data is FeedEventData's account fields); the others
// are a job's or a supplier's.
func AccountEvent(event string) bool {
	_, ok := publishedTypes[event]
	return ok
}

// IsJobEvent reports whether event is one of a job's end.
func IsJobEvent(event string) bool {
	return event == EventJobCompleted || event == EventJobFailed || event == EventJobCancelled
}

// FailuresSummaryPath is the address of the failures summary of one job of
// a supplier (GET /v1/data-import/failures/summary/).
func FailuresSummaryPath(supplier string, jobID int64) string {
	q := url.Values{}
	q.Set("import_supplier", supplier)
	q.Set("job", strconv.FormatInt(jobID, 10))
	return "/v1/data-import/failures/summary/?" + q.Encode()
}

// TopCode is one failure code among a supplier's recent creation outcomes
// (supplier.paused-v1).
type TopCode struct {
	Code  string `json:"code"`
	Count int64  `json:"count"`
}

// SupplierPausedData is the data of supplier.paused-v1 as written; the
// feed adds import_supplier.
type SupplierPausedData struct {
	// Reason says in words why, for the console and the partner.
	Reason string `json:"reason"`
	// FailureRate is the measured share of failed outcomes in the window,
	// as a decimal percentage ("10.50").
	FailureRate string `json:"failure_rate"`
	// Window is how many of the latest creation outcomes were measured.
	Window int `json:"window"`
	// TopCodes are the most frequent failure codes in the window, most first.
	TopCodes []TopCode `json:"top_codes"`
}
