package httpapi

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// AccountLookup finds the created account a post-import request is about.
type AccountLookup interface {
	ImportedAccount(ctx context.Context, supplierID int64, external string) (postgres.ImportedAccount, error)
	PostImportEvents
}

// PostImportEvents records post-import requests that write nothing else
// in the account's timeline.
type PostImportEvents interface {
	RecordPostImportEvent(ctx context.Context, processID int64, event, request string, data map[string]any) error
}

// importedAccount resolves the target of a post-import request (CONTRACT §7):
// an unknown, foreign or not-yet-created account is a 404; a supplier that is
// not Ongoing is a 400. It renders the error and returns false on failure.
//
// Once the account is found, every refusal of the request (named by
// request, one of postgres.Request*) is recorded in the account's timeline
// (EVENT_POST_IMPORT_ERRORED, with the error envelope) before it is
// answered; an accepted request is recorded by the store in the transaction
// of its writes. A 404 records nothing: there is no account to record on.
func (s *Server) importedAccount(c *gin.Context, request, supplierCode, external string) (dataimport.Supplier, postgres.ImportedAccount, bool) {
	ctx := c.Request.Context()
	sup, err := s.deps.Store.SupplierForOrganisation(ctx, principal(c).OrganisationID, supplierCode)
	if dataimport.ErrorCode(err) == dataimport.CodeSupplierNotFound {
		renderError(c, postgres.ErrAccountNotFound())
		return sup, postgres.ImportedAccount{}, false
	}
	if err != nil {
		abortWithError(c, err)
		return sup, postgres.ImportedAccount{}, false
	}
	acc, err := s.deps.Store.ImportedAccount(ctx, sup.ID, external)
	if err != nil {
		abortWithError(c, err)
		return sup, acc, false
	}
	c.Set(ctxOnRefusal, func(e *dataimport.Error) {
		data := map[string]any{"error": envelopeBody(e)}
		if err := s.deps.Store.RecordPostImportEvent(ctx, acc.ProcessID, dataimport.EventPostImportError, request, data); err != nil {
			// The refusal stands; only its timeline entry is missing.
			logger(c).WarnContext(ctx, "post-import refusal not recorded", "process_id", acc.ProcessID, "request", request, "err", err.Error())
		}
	})
	if !sup.AcceptsAccounts() {
		renderError(c, sup.NotOngoingError())
		return sup, acc, false
	}
	return sup, acc, true
}
