package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// failValidation renders field errors found by validation under topCode.
func failValidation(c *gin.Context, topCode, detail string, errs []dataimport.FieldError) {
	renderError(c, dataimport.ValidationError(topCode, detail, errs))
}
