package httpapi

import (
	"bufio"
	"context"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// ProductStore is what the catalogue endpoints and the catalogue check
// need (postgres/products.go).
type ProductStore interface {
	UpsertProducts(ctx context.Context, ps []dataimport.Product) ([]postgres.ProductResult, error)
	EachProduct(ctx context.Context, fn func(code string, product []byte) error) error
	ProductJSON(ctx context.Context, code string) ([]byte, error)
	CheckAccountCatalogue(ctx context.Context, sup dataimport.Supplier, a *dataimport.Account) error
	CatalogueFunc(ctx context.Context) dataimport.CatalogueFunc
	CheckTransactionsCatalogue(ctx context.Context, sup dataimport.Supplier, txs []dataimport.Transaction) error
}

// requireScope refuses (403, in the envelope) a caller whose API key lacks
// scope. Reads need no scope; writes of instance-wide data do.
func (s *Server) requireScope(scope string) gin.HandlerFunc {
	return func(c *gin.Context) {
		if !principal(c).HasScope(scope) {
			renderError(c, dataimport.Errorf(dataimport.CodePermissionDenied,
				"This API key may not do this: it needs the %q scope (importctl apikey create ... --scope %s).", scope, scope))
			return
		}
		c.Next()
	}
}

// validateProducts serves POST /validate-products/: 200 with the products
// as they would be stored, or 400 with every error.
func (s *Server) validateProducts(c *gin.Context) {
	req, err := dataimport.DecodeProducts(requestBody(c))
	if err != nil {
		abortWithError(c, err)
		return
	}
	c.JSON(http.StatusOK, req)
}

// upsertProducts serves POST /products/create-or-update/: every product
// created or updated in one transaction (201), or nothing (400).
func (s *Server) upsertProducts(c *gin.Context) {
	req, err := dataimport.DecodeProducts(requestBody(c))
	if err != nil {
		abortWithError(c, err)
		return
	}
	// The catalogue's audit row names the key that wrote it.
	ctx := postgres.WithActor(c.Request.Context(), postgres.Actor("apikey:"+principal(c).KeyPrefix))
	res, err := s.deps.Store.UpsertProducts(ctx, req.Products)
	if err != nil {
		abortWithError(c, err)
		return
	}
	c.JSON(http.StatusCreated, gin.H{"products": res})
}

// listProducts serves GET /products/: the whole catalogue, streamed row by
// row in code order.
func (s *Server) listProducts(c *gin.Context) {
	ctx := c.Request.Context()
	c.Header("Content-Type", "application/json; charset=utf-8")
	c.Status(http.StatusOK)
	w := bufio.NewWriterSize(c.Writer, 32<<10)
	n := 0
	_ = w.WriteByte('[')
	err := s.deps.Store.EachProduct(ctx, func(_ string, p []byte) error {
		if n > 0 {
			_ = w.WriteByte(',')
		}
		n++
		_, err := w.Write(p)
		return err
	})
	if err != nil {
		// Headers are gone; cut the connection so the client sees a
		// truncated body rather than a list that looks complete.
		logger(c).ErrorContext(ctx, "product list stream failed", "err", err.Error(), "rows", n)
		panic(http.ErrAbortHandler)
	}
	_ = w.WriteByte(']')
	_ = w.Flush()
}

// product serves GET /products/<code>/.
func (s *Server) product(c *gin.Context) {
	body, err := s.deps.Store.ProductJSON(c.Request.Context(), c.Param("code"))
	if err != nil {
		abortWithError(c, err)
		return
	}
	c.Data(http.StatusOK, "application/json; charset=utf-8", body)
}
