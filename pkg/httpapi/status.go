package httpapi

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// statusBody is the status endpoint's answer (interface 4.3); fields beyond
// status and platform_account_number are additions the versioning rules allow.
type statusBody struct {
	Status                dataimport.ImportStatus `json:"status"`
	PlatformAccountNumber string                  `json:"platform_account_number"`
	ExternalAccountNumber string                  `json:"external_account_number"`
	AccountCreatedAt      *dataimport.DateTime    `json:"account_created_at"`
	LatestError           *dataimport.Error       `json:"latest_error,omitempty"`
	CreatedAt             dataimport.DateTime     `json:"created_at"`
	ModifiedAt            dataimport.DateTime     `json:"modified_at"`
	// LandedDigest names what landed (CONTRACT §14); null until created.
	LandedDigest *string `json:"landed_digest"`
}

// accountStatus serves GET /account-transfer-status/<supplier>/<external>/.
// An account of an accepted bulk job answers UNKNOWN from the 202 on; an
// unknown supplier, one the caller may not act for and an unknown account
// all answer the same 404.
func (s *Server) accountStatus(c *gin.Context) {
	p, line, err := s.accountOrLine(c)
	if err != nil {
		abortWithError(c, err)
		return
	}
	if line != nil { // accepted in a bulk job, not staged yet
		at := dataimport.NewDateTime(line.ReceivedAt)
		c.JSON(http.StatusOK, statusBody{Status: dataimport.StatusUnknown, ExternalAccountNumber: c.Param("external"), CreatedAt: at, ModifiedAt: at})
		return
	}
	digest, err := s.landedDigest(c.Request.Context(), p)
	if err != nil {
		abortWithError(c, err)
		return
	}
	c.JSON(http.StatusOK, statusBody{
		Status: p.Status, PlatformAccountNumber: p.PlatformAccountNumber, ExternalAccountNumber: p.ExternalAccountNumber,
		AccountCreatedAt: wireTimePtr(p.AccountCreatedAt), LatestError: p.LatestError,
		CreatedAt: dataimport.NewDateTime(p.CreatedAt), ModifiedAt: dataimport.NewDateTime(p.ModifiedAt), LandedDigest: digest,
	})
}

// asNotFound maps "no such supplier" to the 404 of GET endpoints, whose path
// names the supplier.
func asNotFound(err error) error {
	if dataimport.ErrorCode(err) == dataimport.CodeSupplierNotFound {
		return dataimport.Errorf(dataimport.CodeNotFound, "No account import process found for this import_supplier and external_account_number.")
	}
	return err
}
