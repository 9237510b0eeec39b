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
}

// importedAccount resolves the target of a post-import request (CONTRACT §7):
// an unknown, foreign or not-yet-created account is a 404; a supplier that is
// not Ongoing is a 400. It renders the error and returns false on failure.
func (s *Server) importedAccount(c *gin.Context, supplierCode, external string) (dataimport.Supplier, postgres.ImportedAccount, bool) {
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
	if !sup.AcceptsAccounts() {
		renderError(c, sup.NotOngoingError())
		return sup, acc, false
	}
	return sup, acc, true
}
