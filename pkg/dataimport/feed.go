package dataimport

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"strconv"
	"strings"
)

// FeedEvent is one published notification (CONTRACT §9): the item of the
// pull feed and the body of a webhook delivery alike, so both say the same.
type FeedEvent struct {
	// ID is "evt_<event row id>": the same on every read, retry and replay,
	// so receivers de-duplicate on it.
	ID string `json:"id"`
	// Type is one of PublishedTypes().
	Type       string        `json:"type"`
	OccurredAt DateTime      `json:"occurred_at"`
	Data       FeedEventData `json:"data"`
	// Position is the event's place in commit order: the feed's cursor.
	// Not on the wire (partners get an opaque cursor instead).
	Position int64 `json:"-"`
}

// FeedEventData is what a notification says about the account. The events
// of a job or a supplier (partner_events.go) say something else: their data
// is Other, written as it is.
type FeedEventData struct {
	ImportSupplier        string `json:"import_supplier"`
	ExternalAccountNumber string `json:"external_account_number"`
	// PlatformAccountNumber is the created account's number, null when the
	// event is about an attempt that created none.
	PlatformAccountNumber *string `json:"platform_account_number"`
	// Status is the process's v2 status the event reports.
	Status V2Status `json:"status"`
	// Error is the attempt's error (the latest_error it left), when any.
	Error *Error `json:"error,omitempty"`
	// Other is the whole data of an event that is not an account's.
	Other json.RawMessage `json:"-"`
}

// MarshalJSON writes Other when set, else the account fields.
func (d FeedEventData) MarshalJSON() ([]byte, error) {
	if d.Other != nil {
		return d.Other, nil
	}
	type account FeedEventData
	return json.Marshal(account(d))
}

// feedIDPrefix starts every FeedEvent.ID.
const feedIDPrefix = "evt_"

// FeedEventID is the public id of the event-log row id.
func FeedEventID(rowID int64) string { return feedIDPrefix + strconv.FormatInt(rowID, 10) }

// ParseFeedEventID is the event-log row id of a FeedEvent.ID.
func ParseFeedEventID(id string) (int64, bool) {
	s, ok := strings.CutPrefix(id, feedIDPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != s {
		return 0, false
	}
	return n, true
}

// eventStatus is the v2 status each published event reports. Post-import
// data is accepted only for created accounts, which stay PROCESSED.
var eventStatus = map[string]V2Status{
	EventProcessed:       V2Processed,
	EventErrored:         V2Errored,
	EventCancelled:       V2Cancelled,
	EventDryRunSucceeded: V2DryRunSucceeded,
	EventDryRunErrored:   V2DryRunErrored,
	EventPostImportOK:    V2Processed,
	EventPostImportError: V2Processed,
}

// EventStatus is the status a published timeline event reports; ok is false
// for events that are not published.
func EventStatus(event string) (V2Status, bool) {
	s, ok := eventStatus[event]
	return s, ok
}

// PublishedEvent is the timeline event a notification type names (the
// inverse of PublishedType); ok is false for an unknown type.
func PublishedEvent(typ string) (string, bool) {
	for _, m := range []map[string]string{publishedTypes, partnerEventTypes} {
		for e, t := range m {
			if t == typ {
				return e, true
			}
		}
	}
	return "", false
}

// IsPostImportEvent reports whether a timeline event is about post-import
// data (whose account number is the process's, not the event's).
func IsPostImportEvent(event string) bool {
	return event == EventPostImportOK || event == EventPostImportError
}

// The feed cursor is opaque to partners: a version byte and the position,
// base64url without padding. Strict decoding makes every position have one
// spelling, so a cursor is either one we issued or refused.
const feedCursorV1 = 1

var cursorEncoding = base64.RawURLEncoding.Strict()

// FeedCursor is the cursor of a feed position (0: the start of the feed).
func FeedCursor(position int64) string {
	var b [9]byte
	b[0] = feedCursorV1
	binary.BigEndian.PutUint64(b[1:], uint64(position))
	return cursorEncoding.EncodeToString(b[:])
}

// ParseFeedCursor is the position of a cursor FeedCursor made; ok is false
// for anything else.
func ParseFeedCursor(s string) (int64, bool) {
	if len(s) != 12 {
		return 0, false
	}
	b, err := cursorEncoding.DecodeString(s)
	if err != nil || len(b) != 9 || b[0] != feedCursorV1 {
		return 0, false
	}
	n := binary.BigEndian.Uint64(b[1:])
	if n > 1<<63-1 {
		return 0, false
	}
	return int64(n), true
}
