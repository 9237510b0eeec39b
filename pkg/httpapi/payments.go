package httpapi

import (
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/payments"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// PaymentStore is what the payment-instruction endpoint needs from the database.
type PaymentStore interface {
	ActivePaymentInstruction(ctx context.Context, accountID int64) (dataimport.PaymentInstruction, bool, error)
	AddPaymentInstruction(ctx context.Context, pi dataimport.PaymentInstruction) (dataimport.PaymentInstruction, bool, error)
}

// PaymentVendors is the registry of configured payment vendors
// (*payments.Registry). Each vendor already carries the retry and
// circuit-breaker semantics (payments.Resilient).
type PaymentVendors = payments.Lookup

// createPaymentInstruction serves POST /payment-instruction/create/
// (interface 4.2, CONTRACT §7): the account must be imported; the vendor
// confirms the reference and gives its details; the instruction becomes the
// account's one active instruction. Asking again for the active one is a
// safe retry (201, nothing added, the vendor not asked again).
func (s *Server) createPaymentInstruction(c *gin.Context) {
	ctx := c.Request.Context()
	var vendors []string
	if s.deps.Vendors != nil {
		vendors = s.deps.Vendors.Names()
	}
	req, err := dataimport.Decode(requestBody(c), dataimport.CodeInvalidPayload, "The request body is invalid.",
		dataimport.PaymentInstructionValidator(vendors))
	if err != nil {
		abortWithError(c, err)
		return
	}
	_, acc, ok := s.importedAccount(c, postgres.RequestPaymentInstruction, req.ImportSupplier, req.ExternalAccountNumber)
	if !ok {
		return
	}
	want := dataimport.PaymentInstruction{AccountID: acc.ID, Vendor: req.Vendor, Reference: req.Reference, Type: req.Type}
	active, found, err := s.deps.Store.ActivePaymentInstruction(ctx, acc.ID)
	if err != nil {
		abortWithError(c, err)
		return
	}
	if found {
		if active.SameAs(want) {
			// A retry: nothing to write but the request's timeline entry.
			if err := s.deps.Store.RecordPostImportEvent(ctx, acc.ProcessID, dataimport.EventPostImportOK,
				postgres.RequestPaymentInstruction, postgres.PaymentEventData(active, 0)); err != nil {
				abortWithError(c, err)
				return
			}
			paymentInstructionCreated(c, acc, active)
			return
		}
		renderError(c, dataimport.ErrAccountHasActiveInstruction(active))
		return
	}
	verified, err := payments.VerifyInstruction(ctx, s.deps.Vendors, want)
	if err != nil {
		abortWithError(c, vendorFailure(c, req, err))
		return
	}
	want = verified
	stored, _, err := s.deps.Store.AddPaymentInstruction(ctx, want)
	if err != nil {
		abortWithError(c, err)
		return
	}
	paymentInstructionCreated(c, acc, stored)
}

func paymentInstructionCreated(c *gin.Context, acc postgres.ImportedAccount, pi dataimport.PaymentInstruction) {
	c.JSON(http.StatusCreated, gin.H{"platform_account_number": acc.PlatformAccountNumber, "reference": pi.Reference})
}

// vendorFailure maps a classified vendor failure to the interface's answers:
// the reference is not there or not usable → 400; the vendor failing
// persistently (breaker open, credentials refused) → 400 with the four
// fields that tell partners not to retry unchanged; still failing after the
// in-request retries → 500 server_error, to be retried as is.
func vendorFailure(c *gin.Context, req *dataimport.PaymentInstructionRequest, err error) error {
	refusal := payments.Refusal(err)
	switch {
	case payments.KindOf(err) == 0:
		return err // unexpected: logged and answered 500 by abortWithError
	case refusal == nil:
		logger(c).WarnContext(c.Request.Context(), "payment vendor failed after retries", "vendor", req.Vendor, "err", err.Error())
		return dataimport.Errorf(dataimport.CodeServerError, "The payment vendor did not answer in time. Retry the request as it is.")
	case refusal.Code == dataimport.CodePaymentVendorUnavailable:
		logger(c).WarnContext(c.Request.Context(), "payment vendor failing persistently", "vendor", req.Vendor, "err", err.Error())
		refusal.Extra["external_account_number"] = req.ExternalAccountNumber
		refusal.Extra["import_supplier"] = req.ImportSupplier
		refusal.Extra["reference"] = req.Reference
	}
	return refusal
}
