package httpapi

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Every URL the API emits for an account is built here, each segment
// through url.PathEscape, and the router matches the escaped path
// (escapedPaths), so an accepted identifier ("ACC/7", "50%", "X/cancel")
// addresses its own account and no other route. TestIdentifierRoundTrip
// and FuzzAccountURLs hold the two ends together.

// v1StatusURL is GET /v1/data-import/account-transfer-status/<supplier>/<external>/.
func v1StatusURL(supplier, external string) string {
	return "/v1/data-import/account-transfer-status/" + url.PathEscape(supplier) + "/" + url.PathEscape(external) + "/"
}

// v2StatusURL is GET /v2/data-import/accounts/<supplier>/<external>/.
func v2StatusURL(supplier, external string) string {
	return "/v2/data-import/accounts/" + url.PathEscape(supplier) + "/" + url.PathEscape(external) + "/"
}

// v2CancelURL is POST …/<supplier>/<external>/cancel/.
func v2CancelURL(supplier, external string) string {
	return v2StatusURL(supplier, external) + "cancel/"
}

// v2EventsURL is GET …/<supplier>/<external>/events/.
func v2EventsURL(supplier, external string) string {
	return v2StatusURL(supplier, external) + "events/"
}

// v2EventsPageURL is the timeline page after the event with id after.
func v2EventsPageURL(supplier, external string, size int, after int64) string {
	q := url.Values{}
	q.Set("page_size", strconv.Itoa(size))
	q.Set("cursor", encodeEventCursor(after))
	return v2EventsURL(supplier, external) + "?" + q.Encode()
}

// An event cursor is opaque to clients: the event id, base64url-encoded.
func encodeEventCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(id, 10)))
}

func decodeEventCursor(s string) (int64, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, fmt.Errorf("event cursor: %w", err)
	}
	id, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || id < 0 {
		return 0, fmt.Errorf("event cursor %q: not an event id", b)
	}
	return id, nil
}

// escapedPaths makes the router match the request's escaped path, so "%2F"
// inside a segment stays inside it; unescapePathValues then decodes each
// parameter. gin's own UnescapePathValues uses url.QueryUnescape, which
// would turn "+" into a space, so the decoding is done here.
func escapedPaths(e *gin.Engine) {
	e.UseEscapedPath = true
	e.UnescapePathValues = false
}

// unescapePathValues decodes every path parameter with url.PathUnescape.
// A segment that does not decode names nothing: 404.
func unescapePathValues() gin.HandlerFunc {
	return func(c *gin.Context) {
		for i, p := range c.Params {
			v, err := url.PathUnescape(p.Value)
			if err != nil {
				renderError(c, dataimport.Errorf(dataimport.CodeNotFound, "Not found."))
				return
			}
			c.Params[i].Value = v
		}
		c.Next()
	}
}
