package httpapi

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/documents"
)

// DocumentChecker tells which document paths of a request name no object
// in the store (CONTRACT §7). *documents.Store implements it; a nil
// checker, or a store opened without DOCUMENT_STORE_URL, checks nothing.
type DocumentChecker interface {
	Check(ctx context.Context, root string, refs []documents.Ref) ([]dataimport.FieldError, error)
}

// checkDocuments renders a 400 listing every path of refs that does not
// exist under the supplier's root, and returns false; or returns true.
// Paths are checked only once the body is valid and the account resolved,
// so a caller learns nothing about another tenant's documents.
func (s *Server) checkDocuments(c *gin.Context, sup dataimport.Supplier, refs []documents.Ref) bool {
	if s.deps.Documents == nil || len(refs) == 0 {
		return true
	}
	errs, err := s.deps.Documents.Check(c.Request.Context(), sup.DocumentRoot, refs)
	if err != nil {
		abortWithError(c, err)
		return false
	}
	if len(errs) > 0 {
		failValidation(c, dataimport.CodeInvalidPayload, "Some documents do not exist in the file store.", errs)
		return false
	}
	return true
}
