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

// StatementsStore is what the historical-statements endpoint needs from the database.
type StatementsStore interface {
	CreateHistoricalStatements(ctx context.Context, accountID int64, sts []dataimport.HistoricalStatement) error
}

// createHistoricalStatements serves POST /historical-statements/create/
// (interface 4.2, CONTRACT §7): all statements are stored or none; 201 with
// the validated request.
func (s *Server) createHistoricalStatements(c *gin.Context) {
	today := dataimport.DateOf(time.Now().UTC())
	req, err := dataimport.Decode(requestBody(c), dataimport.CodeInvalidPayload, "The request body is invalid.",
		func(r *dataimport.StatementsRequest) []dataimport.FieldError { return r.Validate(today) })
	if err != nil {
		abortWithError(c, err)
		return
	}
	sup, acc, ok := s.importedAccount(c, postgres.RequestStatements, req.ImportSupplier, req.ExternalAccountNumber)
	if !ok {
		return
	}
	var refs []documents.Ref
	for i, st := range req.Statements {
		if st.StatementPath != nil {
			refs = append(refs, documents.Ref{Attr: fmt.Sprintf("statements.%d.statement_path", i), Path: *st.StatementPath})
		}
	}
	if !s.checkDocuments(c, sup, refs) {
		return
	}
	if err := s.deps.Store.CreateHistoricalStatements(c.Request.Context(), acc.ID, req.Statements); err != nil {
		abortWithError(c, err)
		return
	}
	c.JSON(http.StatusCreated, req)
}
