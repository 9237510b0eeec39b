package httpapi

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

const maxPageSize = 10000

// listItem is one account import record (interface 2.10).
type listItem struct {
	ExternalAccountNumber string               `json:"external_account_number"`
	PlatformAccountNumber *string              `json:"platform_account_number"`
	AccountCreatedAt      *dataimport.DateTime `json:"account_created_at"`
}

func newListItem(r postgres.ListRecord) listItem {
	return listItem{ExternalAccountNumber: r.ExternalAccountNumber, PlatformAccountNumber: r.PlatformAccountNumber, AccountCreatedAt: wireTimePtr(r.AccountCreatedAt)}
}

// listProcesses serves the three list endpoints. Without page_size the whole
// list streams row by row (constant memory for any size); with it, one page
// is read and the next page's address goes in a Link header.
func (s *Server) listProcesses(filter postgres.ListFilter) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx := c.Request.Context()
		sup, err := s.deps.Store.SupplierForOrganisation(ctx, principal(c).OrganisationID, c.Param("supplier"))
		if err != nil {
			abortWithError(c, asNotFound(err))
			return
		}
		pageSize, after, ferrs := pageParams(c)
		if len(ferrs) > 0 {
			failValidation(c, dataimport.CodeInvalidPayload, "Invalid query parameters.", ferrs)
			return
		}
		if pageSize > 0 {
			s.listPage(c, sup.ID, filter, after, pageSize)
			return
		}
		c.Header("Content-Type", "application/json; charset=utf-8")
		c.Status(http.StatusOK)
		w := bufio.NewWriterSize(c.Writer, 32<<10)
		n := 0
		_ = w.WriteByte('[')
		err = s.deps.Store.EachProcess(ctx, sup.ID, filter, "", 0, func(r postgres.ListRecord) error {
			if n > 0 {
				_ = w.WriteByte(',')
			}
			n++
			b, err := json.Marshal(newListItem(r))
			if err != nil {
				return err
			}
			_, err = w.Write(b)
			return err
		})
		if err != nil {
			// Headers are gone; cut the connection so the client sees a
			// truncated body rather than a list that looks complete.
			logger(c).ErrorContext(ctx, "list stream failed", "err", err.Error(), "rows", n)
			panic(http.ErrAbortHandler)
		}
		_ = w.WriteByte(']')
		_ = w.Flush()
	}
}

func (s *Server) listPage(c *gin.Context, supplierID int64, filter postgres.ListFilter, after string, size int) {
	items := make([]listItem, 0, min(size, 1024))
	err := s.deps.Store.EachProcess(c.Request.Context(), supplierID, filter, after, size+1, func(r postgres.ListRecord) error {
		items = append(items, newListItem(r))
		return nil
	})
	if err != nil {
		abortWithError(c, err)
		return
	}
	if len(items) > size {
		items = items[:size]
		q := url.Values{}
		q.Set("page_size", strconv.Itoa(size))
		q.Set("cursor", base64.RawURLEncoding.EncodeToString([]byte(items[size-1].ExternalAccountNumber)))
		c.Header("Link", "<"+c.Request.URL.EscapedPath()+"?"+q.Encode()+`>; rel="next"`)
	}
	c.JSON(http.StatusOK, items)
}

func pageParams(c *gin.Context) (size int, after string, errs []dataimport.FieldError) {
	if v, ok := c.GetQuery("page_size"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			errs = append(errs, dataimport.FieldError{Attr: "page_size", Code: dataimport.CodeInvalid,
				Detail: "page_size must be a whole number from 1 to " + strconv.Itoa(maxPageSize) + "."})
		}
		size = n
	}
	if v, ok := c.GetQuery("cursor"); ok {
		b, err := base64.RawURLEncoding.DecodeString(v)
		// A cursor is an external account number: text Postgres can hold.
		if err != nil || size == 0 || !cleanText(string(b), maxPathSegment) {
			errs = append(errs, dataimport.FieldError{Attr: "cursor", Code: dataimport.CodeInvalid,
				Detail: "cursor must be the value from a Link header, sent with page_size."})
		}
		after = string(b)
	}
	return size, after, errs
}
