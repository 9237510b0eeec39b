package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/documents"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// NotesStore is what the notes endpoint needs from the database.
type NotesStore interface {
	CreateNotes(ctx context.Context, accountID int64, notes []postgres.NoteInput, now time.Time) ([]dataimport.NoteResult, error)
}

// createNotes serves POST /notes/create/ (interface 4.2, CONTRACT §7): 201
// with one {created_at, body, status} per note, in request order; a note
// the account already has is NOTE_ALREADY_EXISTS and not created again.
func (s *Server) createNotes(c *gin.Context) {
	now := time.Now().UTC()
	var createdAtGiven []bool // before Validate fills the default
	req, err := dataimport.Decode(requestBody(c), dataimport.CodeInvalidPayload, "The request body is invalid.",
		func(r *dataimport.NotesRequest) []dataimport.FieldError {
			createdAtGiven = make([]bool, len(r.Notes))
			for i, n := range r.Notes {
				createdAtGiven[i] = n.CreatedAt != nil
			}
			return r.Validate(now)
		})
	if err != nil {
		abortWithError(c, err)
		return
	}
	sup, acc, ok := s.importedAccount(c, postgres.RequestNotes, req.ImportSupplier, req.ExternalAccountNumber)
	if !ok {
		return
	}
	var refs []documents.Ref
	for i, n := range req.Notes {
		for j, p := range n.DocumentPaths {
			refs = append(refs, documents.Ref{Attr: fmt.Sprintf("notes.%d.document_paths.%d.document_path", i, j), Path: p.DocumentPath})
		}
	}
	if !s.checkDocuments(c, sup, refs) {
		return
	}
	in := make([]postgres.NoteInput, len(req.Notes))
	for i, n := range req.Notes {
		in[i] = postgres.NoteInput{Note: n, MatchCreatedAt: createdAtGiven[i]}
	}
	results, err := s.deps.Store.CreateNotes(c.Request.Context(), acc.ID, in, now)
	if err != nil {
		abortWithError(c, err)
		return
	}
	c.JSON(http.StatusCreated, results)
}
