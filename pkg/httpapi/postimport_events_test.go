package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

type timelineEvent struct {
	Event string         `json:"event"`
	Data  map[string]any `json:"data"`
}

// timeline is the account's v2 event timeline.
func (p *postImport) timeline(external string) []timelineEvent {
	p.TB.Helper()
	r := p.As(p.token, http.MethodGet, "/v2/data-import/accounts/DEMO_ENERGY/"+external+"/events/", nil)
	if r.Status != http.StatusOK {
		p.TB.Fatalf("events of %s: %d %s", external, r.Status, r.Body)
	}
	var evs []timelineEvent
	r.Decode(&evs)
	return evs
}

// Post-import requests on a created account join its timeline (CONTRACT §8):
// accepted ones as EVENT_POST_IMPORT_COMPLETED, written with the rows they
// add; ones refused after the account was found as EVENT_POST_IMPORT_ERRORED
// with the error envelope. A rolled-back request leaves no COMPLETED event; a
// request refused before its account is found leaves nothing.
func TestPostImportEventsInTimeline(t *testing.T) {
	p := newPostImport(t)
	p.imported("EXT-EV")
	p.imported("EXT-OTHER")
	creation := len(p.timeline("EXT-EV"))

	if r := p.post(notesPath, body("EXT-EV", "notes", `{"body":"first"}`, `{"body":"second"}`)); r.Status != http.StatusCreated {
		t.Fatalf("notes: %d %s", r.Status, r.Body)
	}
	// The first transaction is written, then the second is refused: the
	// whole request rolls back.
	bad := p.post(transactionsPath+"?force_add_to_current_statement=false", body("EXT-EV", "transactions",
		charge("EV-1", "2025-06-10", "5"), charge("EV-2", "2020-01-01", "7")))
	wantImportError(t, bad, "EV-2")
	if n := p.count(`SELECT count(*) FROM account_transactions WHERE transaction_id LIKE 'EV-%'`); n != 0 {
		t.Fatalf("%d transactions kept from a refused request", n)
	}
	if r := p.post(statementsPath, body("EXT-EV", "statements",
		`{"statement_id":"S-EV","bill_period_from_date":"2025-01-01","bill_period_to_date":"2025-01-31"}`)); r.Status != http.StatusCreated {
		t.Fatalf("statements: %d %s", r.Status, r.Body)
	}
	// Not recorded: an unknown account (404) and a body refused before the
	// account is looked up.
	if r := p.post(notesPath, body("EXT-NOPE", "notes", `{"body":"x"}`)); r.Status != http.StatusNotFound {
		t.Fatalf("notes to an unknown account: %d %s", r.Status, r.Body)
	}
	if r := p.post(notesPath, body("EXT-EV", "notes", `{"body":1}`)); r.Status != http.StatusBadRequest {
		t.Fatalf("invalid notes: %d %s", r.Status, r.Body)
	}
	// A retry that adds nothing is still an accepted request.
	if r := p.post(notesPath, body("EXT-EV", "notes", `{"body":"first"}`)); r.Status != http.StatusCreated {
		t.Fatalf("notes again: %d %s", r.Status, r.Body)
	}

	evs := p.timeline("EXT-EV")
	if len(evs) < creation || evs[creation-1].Event != "EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED" {
		t.Fatalf("creation events changed: %+v", evs)
	}
	got := evs[creation:]
	want := []struct {
		event, request string
		count          float64
	}{
		{"EVENT_POST_IMPORT_COMPLETED", "notes", 2},
		{"EVENT_POST_IMPORT_ERRORED", "transactions", -1},
		{"EVENT_POST_IMPORT_COMPLETED", "statements", 1},
		{"EVENT_POST_IMPORT_COMPLETED", "notes", 0},
	}
	if len(got) != len(want) {
		t.Fatalf("post-import events %+v, want %d", got, len(want))
	}
	for i, w := range want {
		e := got[i]
		if e.Event != w.event || e.Data["request"] != w.request {
			t.Errorf("event %d: %s %v, want %s %s", i, e.Event, e.Data, w.event, w.request)
		}
		if w.count >= 0 && e.Data["count"] != w.count {
			t.Errorf("event %d count: %v, want %v", i, e.Data["count"], w.count)
		}
	}
	if got[3].Data["already_existing"] != 1.0 {
		t.Errorf("retried notes: %v", got[3].Data)
	}
	// The refusal carries the envelope the partner was answered with.
	var answered map[string]any
	if err := json.Unmarshal(bad.Body, &answered); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got[1].Data["error"]) != fmt.Sprint(answered) {
		t.Errorf("refusal event error %v, want the answer %v", got[1].Data["error"], answered)
	}
	// Another account's timeline is its own.
	if other := p.timeline("EXT-OTHER"); len(other) != creation {
		t.Errorf("other account's timeline: %+v", other)
	}

	// The event shares the transaction of the rows it records: when it
	// cannot be written, the notes are not kept either.
	notes := func() int64 { return p.count(`SELECT count(*) FROM account_notes`) }
	before := notes()
	p.exec(`CREATE FUNCTION refuse_event() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'event log unavailable'; END $$`)
	p.exec(`CREATE TRIGGER refuse_event BEFORE INSERT ON import_process_events FOR EACH ROW EXECUTE FUNCTION refuse_event()`)
	if r := p.post(notesPath, body("EXT-EV", "notes", `{"body":"third"}`)); r.Status != http.StatusInternalServerError {
		t.Fatalf("notes without an event log: %d %s", r.Status, r.Body)
	}
	if n := notes(); n != before {
		t.Fatalf("%d notes kept without their event", n-before)
	}
}

func (p *postImport) exec(sql string) {
	p.TB.Helper()
	if err := p.DB.Gorm().Exec(sql).Error; err != nil {
		p.TB.Fatal(err)
	}
}
