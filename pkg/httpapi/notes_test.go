package httpapi_test

import (
	"net/http"
	"testing"
	"time"
)

type noteResult struct {
	CreatedAt string `json:"created_at"`
	Body      string `json:"body"`
	Status    string `json:"status"`
}

func noteResults(t *testing.T, r interface{ Decode(any) }) []noteResult {
	t.Helper()
	var out []noteResult
	r.Decode(&out)
	return out
}

func TestNotes(t *testing.T) {
	p := newPostImport(t)
	p.imported("EXT-N")
	// The sample's own paths, and some more.
	p.doc("letters/EXT-0001/welcome.pdf", "letters/EXT-0001/tariff.pdf", "calls/EXT-0001/2025-05-20.mp3", "letters/EXT-N/welcome.pdf", "letters/EXT-N/tariff.pdf")
	const fromCreation = 2 // the sample account brings two notes
	notes := func() int64 { return p.count(`SELECT count(*) FROM account_notes`) }

	t.Run("interface sample accepted, results in order", func(t *testing.T) {
		before := time.Now().UTC().Truncate(time.Second)
		r := p.post(notesPath, sample(t, "notes_sample.json", "EXT-N"))
		if r.Status != http.StatusCreated {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		got := noteResults(t, r)
		if len(got) != 4 {
			t.Fatalf("%s", r.Body)
		}
		for _, g := range got {
			if g.Status != "NOTE_CREATION_SUCCESS" {
				t.Errorf("%+v", g)
			}
		}
		if got[0].CreatedAt != "2025-04-10T16:20:00Z" || got[0].Body != "Customer prefers to be called after 5pm." || got[2].Body != "" {
			t.Errorf("%s", r.Body)
		}
		defaulted, err := time.Parse(time.RFC3339, got[3].CreatedAt)
		if err != nil || defaulted.Before(before) || defaulted.After(time.Now().Add(time.Second)) {
			t.Errorf("created_at default %q", got[3].CreatedAt)
		}
		if n := notes(); n != fromCreation+4 {
			t.Fatalf("%d notes", n)
		}
		var pinned []struct {
			IsPinned bool
			UnpinAt  time.Time
		}
		p.DB.Gorm().Raw(`SELECT is_pinned, unpin_at FROM account_notes WHERE body LIKE 'Priority services%'`).Scan(&pinned)
		if len(pinned) != 1 || !pinned[0].IsPinned || !pinned[0].UnpinAt.Equal(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)) {
			t.Errorf("pinned note: %+v", pinned)
		}
		var paths string
		p.DB.Gorm().Raw(`SELECT document_paths::text FROM account_notes WHERE body = ''`).Scan(&paths)
		if paths != `["letters/EXT-0001/welcome.pdf", "letters/EXT-0001/tariff.pdf"]` {
			t.Errorf("paths %s", paths)
		}
	})

	t.Run("same request again: all NOTE_ALREADY_EXISTS", func(t *testing.T) {
		r := p.post(notesPath, sample(t, "notes_sample.json", "EXT-N"))
		if r.Status != http.StatusCreated {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		for _, g := range noteResults(t, r) {
			if g.Status != "NOTE_ALREADY_EXISTS" {
				t.Errorf("%+v", g)
			}
		}
		if n := notes(); n != fromCreation+4 {
			t.Fatalf("%d notes", n)
		}
	})

	t.Run("de-duplication rules", func(t *testing.T) {
		before := notes()
		r := p.post(notesPath, body("EXT-N", "notes",
			`{"body":"Customer asked to be contacted by e-mail only."}`,                                    // from account creation
			`{"body":"Customer prefers to be called after 5pm.","created_at":"2025-04-10T17:20:00+01:00"}`, // same instant
			`{"body":"Customer prefers to be called after 5pm.","created_at":"2025-04-11T16:20:00Z"}`,      // other created_at
			`{"body":"New note"}`,
			`{"body":"New note","is_pinned":true}`,                              // duplicate within the request
			`{"document_paths":[{"document_path":"letters/EXT-N/tariff.pdf"}]}`, // body-less: paths differ
			`{"document_paths":[{"document_path":"letters/EXT-N/tariff.pdf"}]}`, // ... and now match
		))
		if r.Status != http.StatusCreated {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		got := noteResults(t, r)
		want := []string{"NOTE_ALREADY_EXISTS", "NOTE_ALREADY_EXISTS", "NOTE_CREATION_SUCCESS", "NOTE_CREATION_SUCCESS",
			"NOTE_ALREADY_EXISTS", "NOTE_CREATION_SUCCESS", "NOTE_ALREADY_EXISTS"}
		for i, w := range want {
			if got[i].Status != w {
				t.Errorf("note %d: %+v, want %s", i, got[i], w)
			}
		}
		// An existing note's result carries its own created_at.
		if got[0].CreatedAt != "2025-03-02T09:30:00Z" || got[1].CreatedAt != "2025-04-10T16:20:00Z" || got[4].CreatedAt != got[3].CreatedAt {
			t.Errorf("created_at: %s", r.Body)
		}
		if n := notes(); n != before+3 {
			t.Fatalf("%d notes, want %d", n, before+3)
		}
	})

	t.Run("validation", func(t *testing.T) {
		for _, tc := range []struct {
			name, body, attr, code string
		}{
			{"body or paths", body("EXT-N", "notes", `{"is_pinned":true}`), "notes.0", "note_body_or_document_path_not_found"},
			{"blank body", body("EXT-N", "notes", `{"body":"  "}`), "notes.0", "note_body_or_document_path_not_found"},
			{"unpin before created", body("EXT-N", "notes", `{"body":"x","created_at":"2025-01-02T00:00:00Z","unpin_at":"2025-01-01T00:00:00Z"}`),
				"notes.0.unpin_at", "note_unpin_at_earlier_than_creation_date"},
			{"unpin before now", body("EXT-N", "notes", `{"body":"x","is_pinned":true,"unpin_at":"2020-01-01T00:00:00Z"}`),
				"notes.0.unpin_at", "note_unpin_at_earlier_than_creation_date"},
			{"datetime", body("EXT-N", "notes", `{"body":"x","created_at":"2025-01-02"}`), "notes.0.created_at", "invalid_datetime"},
			{"boolean", body("EXT-N", "notes", `{"body":"x","is_pinned":"yes"}`), "notes.0.is_pinned", "invalid"},
			{"unknown field", body("EXT-N", "notes", `{"body":"x","colour":"red"}`), "notes.0.colour", "unknown_field"},
			{"notes required", `{"import_supplier":"DEMO_ENERGY","external_account_number":"EXT-N"}`, "notes", "required"},
			{"path object", body("EXT-N", "notes", `{"document_paths":[{}]}`), "notes.0.document_paths.0.document_path", "required"},
		} {
			r := p.post(notesPath, tc.body)
			assertEnvelope(t, r, http.StatusBadRequest, "invalid_payload")
			if errs := fieldErrors(t, r); errs[tc.attr] != tc.code {
				t.Errorf("%s: %v", tc.name, errs)
			}
		}
		if r := p.post(notesPath, `{"notes":`); r.Status != http.StatusBadRequest || r.JSON()["code"] != "parse_error" {
			t.Errorf("not JSON: %d %s", r.Status, r.Body)
		}
	})

	t.Run("odd document paths refused, nothing stored", func(t *testing.T) {
		before := notes()
		for path, code := range oddPaths {
			r := p.post(notesPath, body("EXT-N", "notes", `{"body":"fine"}`,
				`{"body":"x","document_paths":[{"document_path":"letters/EXT-N/welcome.pdf"},{"document_path":`+jsonString(path)+`}]}`))
			assertEnvelope(t, r, http.StatusBadRequest, "invalid_payload")
			if errs := fieldErrors(t, r); errs["notes.1.document_paths.1.document_path"] != code || len(errs) != 1 {
				t.Errorf("%.30q: %v", path, errs)
			}
		}
		if n := notes(); n != before {
			t.Fatalf("%d notes stored", n-before)
		}
	})

	t.Run("document missing from the store", func(t *testing.T) {
		before := notes()
		p.doc("../tariff.pdf") // in the bucket, outside DEMO_ENERGY's root
		r := p.post(notesPath, body("EXT-N", "notes", `{"body":"first, valid"}`,
			`{"body":"x","document_paths":[{"document_path":"letters/EXT-N/welcome.pdf"},{"document_path":"letters/EXT-N/missing.pdf"}]}`,
			`{"document_paths":[{"document_path":"tariff.pdf"}]}`))
		assertEnvelope(t, r, http.StatusBadRequest, "invalid_payload")
		errs := fieldErrors(t, r)
		if errs["notes.1.document_paths.1.document_path"] != "path_does_not_exist_in_file_store" ||
			errs["notes.2.document_paths.0.document_path"] != "path_does_not_exist_in_file_store" || len(errs) != 2 {
			t.Errorf("%v", errs)
		}
		if n := notes(); n != before {
			t.Fatalf("%d notes stored", n-before)
		}
	})
}
