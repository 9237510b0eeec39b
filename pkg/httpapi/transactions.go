package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// TransactionsStore is what the transactions endpoint needs from the database.
type TransactionsStore interface {
	CreateTransactions(ctx context.Context, in postgres.TransactionsInput) ([]dataimport.TransactionResult, error)
}

// createTransactions serves POST /transactions/create/ (interface 4.2,
// CONTRACT §7): all of the request's transactions are added, or none. 201
// {"results": [...]} in request order; a transaction that cannot be stored
// is a 400 TRANSACTION_IMPORT_ERROR naming the first such transaction.
func (s *Server) createTransactions(c *gin.Context) {
	var flagErrs []dataimport.FieldError
	check := boolQuery(c, "check_previously_added", true, &flagErrs)
	force := boolQuery(c, "force_add_to_current_statement", true, &flagErrs)
	// Flag errors are reported with the body's, all at once.
	req, err := dataimport.Decode(requestBody(c), dataimport.CodeInvalidPayload, "The request body is invalid.",
		func(r *dataimport.TransactionsRequest) []dataimport.FieldError {
			return dataimport.JoinFieldErrors(flagErrs, r.Validate())
		})
	if err != nil {
		abortWithError(c, err)
		return
	}
	sup, acc, ok := s.importedAccount(c, postgres.RequestTransactions, req.ImportSupplier, req.ExternalAccountNumber)
	if !ok {
		return
	}
	if err := s.deps.Store.CheckTransactionsCatalogue(c.Request.Context(), sup, req.Transactions); err != nil {
		abortWithError(c, err)
		return
	}
	results, err := s.deps.Store.CreateTransactions(c.Request.Context(), postgres.TransactionsInput{
		AccountID: acc.ID, Transactions: req.Transactions, CheckPreviouslyAdded: check, ForceIntoOpenStatement: force, Now: time.Now().UTC(),
	})
	if err != nil {
		abortWithError(c, err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"results": results})
}

// boolQuery reads an optional boolean query flag (CONTRACT §7: true/false
// in any case, 1/0). A bad or repeated value is a field error on the flag's
// name, appended to errs.
func boolQuery(c *gin.Context, name string, def bool, errs *[]dataimport.FieldError) bool {
	vals, present := c.GetQueryArray(name)
	if !present {
		return def
	}
	v, ok := dataimport.ParseBoolFlag(vals[0])
	if !ok || len(vals) > 1 {
		*errs = append(*errs, dataimport.FieldError{Attr: name, Code: dataimport.CodeInvalid,
			Detail: fmt.Sprintf("%s must be given once, as true, false, 1 or 0.", name)})
		return def
	}
	return v
}
