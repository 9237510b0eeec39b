package dataimport

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

func TestEveryPublishedEventHasAStatusAndAType(t *testing.T) {
	events := PublishedEvents()
	if len(events) != 11 {
		t.Fatalf("%d published events, want the 7 of CONTRACT §9 and the 4 of §13–§14", len(events))
	}
	for _, e := range events {
		typ, ok := PublishedType(e)
		if !ok {
			t.Fatalf("%s has no type", e)
		}
		if back, ok := PublishedEvent(typ); !ok || back != e {
			t.Errorf("PublishedEvent(%q) = %q, %v; want %q", typ, back, ok, e)
		}
		// An account's event reports its status; a job's or a supplier's has none.
		if _, ok := EventStatus(e); ok != AccountEvent(e) {
			t.Errorf("%s: has a status %v, is an account's event %v", e, ok, AccountEvent(e))
		}
	}
	for _, e := range []string{EventStaged, EventScheduled, EventStarted} {
		if _, ok := PublishedType(e); ok {
			t.Errorf("%s is published", e)
		}
		if _, ok := EventStatus(e); ok {
			t.Errorf("%s has a feed status", e)
		}
	}
	if _, ok := PublishedEvent("import_process.staged-v1"); ok {
		t.Error("an unknown type maps to an event")
	}
	want := []string{"import_process.cancelled-v1", "import_process.complete-v1", "import_process.dry_run_complete-v1",
		"import_process.dry_run_error-v1", "import_process.error-v1", "import_process.post_import.completed-v1",
		"import_process.post_import.error-v1", "job.cancelled-v1", "job.completed-v1", "job.failed-v1", "supplier.paused-v1"}
	if got := slices.Sorted(slices.Values(PublishedTypes())); !slices.Equal(got, want) {
		t.Errorf("types %v, want %v", got, want)
	}
}

func TestFeedEventJSON(t *testing.T) {
	at := NewDateTime(time.Date(2025, 6, 1, 9, 30, 0, 123, time.FixedZone("x", 3600)))
	number := "A-1F2E3D4C"
	for _, tc := range []struct {
		ev   FeedEvent
		want string
	}{
		{FeedEvent{ID: FeedEventID(42), Type: "import_process.complete-v1", OccurredAt: at, Position: 7,
			Data: FeedEventData{ImportSupplier: "DEMO", ExternalAccountNumber: "EXT-1", PlatformAccountNumber: &number, Status: V2Processed}},
			`{"id":"evt_42","type":"import_process.complete-v1","occurred_at":"2025-06-01T08:30:00Z","data":{"import_supplier":"DEMO","external_account_number":"EXT-1","platform_account_number":"A-1F2E3D4C","status":"PROCESSED"}}`},
		{FeedEvent{ID: FeedEventID(43), Type: "import_process.error-v1", OccurredAt: at,
			Data: FeedEventData{ImportSupplier: "DEMO", ExternalAccountNumber: "EXT-2", Status: V2Errored,
				Error: &Error{Code: "data_refused", Detail: "No.", Domain: DomainProcessing, Extra: map[string]any{"x": 1}}}},
			`{"id":"evt_43","type":"import_process.error-v1","occurred_at":"2025-06-01T08:30:00Z","data":{"import_supplier":"DEMO","external_account_number":"EXT-2","platform_account_number":null,"status":"ERRORED","error":{"code":"data_refused","detail":"No.","domain":"processing"}}}`},
	} {
		b, err := json.Marshal(tc.ev)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("got  %s\nwant %s", b, tc.want)
		}
	}
}

func TestFeedEventID(t *testing.T) {
	if id := FeedEventID(12345); id != "evt_12345" {
		t.Fatalf("id %q", id)
	}
	if n, ok := ParseFeedEventID("evt_12345"); !ok || n != 12345 {
		t.Fatalf("parse: %d %v", n, ok)
	}
	for _, bad := range []string{"", "evt_", "evt_0", "evt_-1", "evt_012", "evt_1x", "12345", "EVT_1"} {
		if _, ok := ParseFeedEventID(bad); ok {
			t.Errorf("ParseFeedEventID(%q) accepted", bad)
		}
	}
}

func TestFeedCursor(t *testing.T) {
	for _, pos := range []int64{0, 1, 255, 1 << 40, 1<<63 - 1} {
		c := FeedCursor(pos)
		if got, ok := ParseFeedCursor(c); !ok || got != pos {
			t.Errorf("cursor %q of %d parses as %d, %v", c, pos, got, ok)
		}
	}
	valid := FeedCursor(5)
	for _, bad := range []string{"", "0", "5", "latest", valid + "A", valid[:11], valid[:11] + "=", valid[:11] + "+",
		"AgAAAAAAAAAF", // version 2
		"AYAAAAAAAAAA", // a negative position
		"AQAAAAAAAAA%", "AQAAAAAAAAA/"} {
		if n, ok := ParseFeedCursor(bad); ok {
			t.Errorf("ParseFeedCursor(%q) accepted as %d", bad, n)
		}
	}
}
