package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// bindJSON strictly decodes the request body into dst. Unknown fields, wrong
// types and nulls come back together, each with its dot path, under
// topCode (invalid_payload for most bodies, account_failed_validation for
// accounts). It returns false after rendering the error.
func bindJSON(c *gin.Context, dst any, topCode string) bool {
	fieldErrs, err := dataimport.DecodeStrict(requestBody(c), dst)
	if err != nil {
		abortWithError(c, err)
		return false
	}
	if len(fieldErrs) > 0 {
		renderError(c, dataimport.ValidationError(topCode, "The request body is invalid.", fieldErrs))
		return false
	}
	return true
}

// fail renders field errors found by validation under topCode.
func failValidation(c *gin.Context, topCode, detail string, errs []dataimport.FieldError) {
	renderError(c, dataimport.ValidationError(topCode, detail, errs))
}
