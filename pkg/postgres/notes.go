package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// NoteInput is one note of a notes request, validated (created_at and
// is_pinned filled).
type NoteInput struct {
	Note dataimport.Note
	// MatchCreatedAt: the partner sent created_at, so only a note with the
	// same body and the same created_at is a duplicate (CONTRACT §7).
	MatchCreatedAt bool
}

// CreateNotes adds notes to an account in one transaction, skipping each
// one the account already has (NOTE_ALREADY_EXISTS), including notes earlier
// in the same request. A note matches an existing one when the bodies are
// equal (and created_at, when given); a note without a body matches only a
// body-less note with the same document paths, or every attachment-only
// note would be a duplicate of the first. The account row is locked, so
// concurrent requests for one account cannot both create the same note.
// Results are in request order; an existing note's result carries its own
// created_at. The account's timeline records the request.
func (db *DB) CreateNotes(ctx context.Context, accountID int64, notes []NoteInput, now time.Time) ([]dataimport.NoteResult, error) {
	results := make([]dataimport.NoteResult, len(notes))
	err := db.postImport(ctx, accountID, RequestNotes, func(tx *gorm.DB, _ lockedAccount) (map[string]any, error) {
		known, err := notesWithBodies(tx, accountID, notes)
		if err != nil {
			return nil, err
		}
		var create []dataimport.Note
		for i, in := range notes {
			n := in.Note
			body := deref(n.Body)
			paths := notePaths(n)
			results[i] = dataimport.NoteResult{Body: body, Status: dataimport.NoteCreationSuccess}
			if n.CreatedAt != nil {
				results[i].CreatedAt = *n.CreatedAt
			}
			if match := slices.IndexFunc(known[body], func(k knownNote) bool {
				return (body != "" || slices.Equal(k.paths, paths)) &&
					(!in.MatchCreatedAt || n.CreatedAt == nil || k.createdAt.Equal(n.CreatedAt.Time))
			}); match >= 0 {
				results[i].Status = dataimport.NoteAlreadyExists
				results[i].CreatedAt = dataimport.NewDateTime(known[body][match].createdAt)
				continue
			}
			created := now
			if n.CreatedAt != nil {
				created = n.CreatedAt.Time
			}
			results[i].CreatedAt = dataimport.NewDateTime(created)
			known[body] = append(known[body], knownNote{paths: paths, createdAt: created})
			create = append(create, n)
		}
		if err := insertNotes(tx, accountID, create, now); err != nil {
			return nil, err
		}
		return map[string]any{"count": len(create), "already_existing": len(notes) - len(create)}, nil
	})
	if err != nil {
		return nil, err
	}
	return results, nil
}

type knownNote struct {
	paths     []string
	createdAt time.Time
}

func notePaths(n dataimport.Note) []string {
	out := make([]string, len(n.DocumentPaths))
	for i, p := range n.DocumentPaths {
		out[i] = p.DocumentPath
	}
	return out
}

// notesWithBodies loads the account's notes whose body is one of the
// request's, by body.
func notesWithBodies(tx *gorm.DB, accountID int64, notes []NoteInput) (map[string][]knownNote, error) {
	bodies := make([]string, 0, len(notes))
	for _, n := range notes {
		bodies = append(bodies, deref(n.Note.Body))
	}
	var rows []struct {
		Body          string
		DocumentPaths string
		CreatedAt     time.Time
	}
	err := tx.Raw(`SELECT body, document_paths::text AS document_paths, created_at FROM account_notes
		WHERE account_id = ? AND body IN (SELECT jsonb_array_elements_text(?::jsonb)) ORDER BY id`,
		accountID, jsonText(bodies)).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("load notes: %w", err)
	}
	known := make(map[string][]knownNote, len(rows))
	for _, r := range rows {
		var paths []string
		if err := json.Unmarshal([]byte(r.DocumentPaths), &paths); err != nil {
			return nil, fmt.Errorf("decode document paths: %w", err)
		}
		if paths == nil {
			paths = []string{}
		}
		known[r.Body] = append(known[r.Body], knownNote{paths: paths, createdAt: r.CreatedAt})
	}
	return known, nil
}

// jsonText encodes v as a JSON text parameter, for "IN (SELECT
// jsonb_array_elements_text(?::jsonb))": one parameter however long the
// list, where gorm would otherwise expand a slice into one per element.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("postgres: encode parameter: %v", err)) // only strings are passed
	}
	return string(b)
}
