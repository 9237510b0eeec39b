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
// An unknown supplier, one the caller may not act for and an unknown account
// all answer the same 404.
func (s *Server) accountStatus(c *gin.Context) {
	p, err := s.deps.Store.ProcessForOrganisation(c.Request.Context(), principal(c).OrganisationID, c.Param("supplier"), c.Param("external"))
	if err != nil {
		abortWithError(c, asNotFound(err))
		return
	}
	if p.StagedVersion == 0 && !p.Imported() {
		// Only marked skipped by an operator: nothing a partner staged.
		abortWithError(c, asNotFound(dataimport.ErrSupplierNotFound("")))
		return
	}
	digest, err := s.landedDigest(c.Request.Context(), p.PlatformAccountNumber)
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
