package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/market"
)

// decodeAccount turns the body into a validated, normalised account of a
// supplier the caller may act for. The supplier comes first because its
// phone region decides which numbers are valid.
func (s *Server) decodeAccount(c *gin.Context) (*dataimport.Account, dataimport.Supplier, bool) {
	acc, sup, err := s.decodeAccountBody(c, requestBody(c))
	if err != nil {
		abortWithError(c, err)
		return nil, sup, false
	}
	return acc, sup, true
}

// decodeAccountBody is decodeAccount for an account object taken from a
// larger body (v2 wraps it in "payload"); errors are returned, not rendered.
func (s *Server) decodeAccountBody(c *gin.Context, body []byte) (*dataimport.Account, dataimport.Supplier, error) {
	var sup dataimport.Supplier
	acc, err := dataimport.DecodeAccountFor(body, func(a *dataimport.Account) (dataimport.AccountRules, error) {
		rules := dataimport.AccountRules{PhoneRegion: "GB", Today: dataimport.DateOf(time.Now().UTC())}
		if s.deps.Vendors != nil {
			rules.PaymentVendors = s.deps.Vendors.Names()
		}
		if a.ImportSupplier == "" {
			return rules, nil // validation reports the missing supplier
		}
		var err error
		if sup, err = s.deps.Store.SupplierForOrganisation(c.Request.Context(), principal(c).OrganisationID, a.ImportSupplier); err != nil {
			return rules, err
		}
		rules.PhoneRegion = sup.PhoneRegion
		if sup.RequireProducts {
			rules.Catalogue = s.deps.Store.CatalogueFunc(c.Request.Context())
		}
		rules.Market, err = market.For(sup.Market)
		return rules, err
	})
	return acc, sup, err
}

// validateAccount serves POST /validate-account/: 200 with the normalised
// account (defaults filled, phones in E.164), or every error at once.
func (s *Server) validateAccount(c *gin.Context) {
	acc, _, ok := s.decodeAccount(c)
	if !ok {
		return
	}
	c.JSON(http.StatusOK, acc)
}

type stageBody struct {
	ImportSupplier        string `json:"import_supplier"`
	ExternalAccountNumber string `json:"external_account_number"`
}

// stageAccount serves POST /account-import-process/create-or-update/: the
// same validation, then the normalised payload is stored as a new version.
// 201 the first time, 200 on updates.
func (s *Server) stageAccount(c *gin.Context) {
	body := requestBody(c)
	acc, sup, err := s.decodeAccountBody(c, body)
	if err != nil {
		s.recordRefusal(c, sup, body, err)
		abortWithError(c, err)
		return
	}
	payload, ok := payloadToStage(c, sup, acc)
	if !ok {
		return
	}
	res, err := s.deps.Store.Stage(c.Request.Context(), sup, acc.ExternalAccountNumber, payload)
	if err != nil {
		abortWithError(c, err)
		return
	}
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	c.JSON(status, stageBody{ImportSupplier: sup.Code, ExternalAccountNumber: acc.ExternalAccountNumber})
}

// payloadToStage is the staged payload of a validated account (v1 stage and
// v2 create): refused when the supplier takes no accounts now.
func payloadToStage(c *gin.Context, sup dataimport.Supplier, acc *dataimport.Account) ([]byte, bool) {
	if !sup.AcceptsAccounts() {
		renderError(c, sup.NotOngoingError())
		return nil, false
	}
	payload, err := json.Marshal(acc)
	if err != nil {
		abortWithError(c, fmt.Errorf("encode staged account: %w", err))
		return nil, false
	}
	return payload, true
}
