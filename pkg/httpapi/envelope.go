package httpapi

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// statusByCode maps top-level error codes to HTTP statuses; anything not
// listed is a 400 (validation and business-rule refusals).
var statusByCode = map[string]int{
	dataimport.CodeNotAuthenticated:         http.StatusUnauthorized,
	dataimport.CodePermissionDenied:         http.StatusForbidden,
	dataimport.CodeAuthenticationFailed:     http.StatusUnauthorized,
	dataimport.CodeTokenExpired:             http.StatusUnauthorized,
	dataimport.CodeNotFound:                 http.StatusNotFound,
	dataimport.CodeProcessNotCancellable:    http.StatusConflict,
	dataimport.CodeJobNotRetryable:          http.StatusConflict,
	dataimport.CodeMethodNotAllowed:         http.StatusMethodNotAllowed,
	dataimport.CodeRequestTooLarge:          http.StatusRequestEntityTooLarge,
	dataimport.CodeUnsupportedMediaType:     http.StatusUnsupportedMediaType,
	dataimport.CodeConcurrencyLimitExceeded: http.StatusTooManyRequests,
	dataimport.CodeThrottled:                http.StatusTooManyRequests,
	dataimport.CodeServerError:              http.StatusInternalServerError,
	dataimport.CodeServiceUnavailable:       http.StatusServiceUnavailable,
	dataimport.CodeIdempotencyKeyReused:     http.StatusUnprocessableEntity,
	dataimport.CodeIdempotencyKeyInUse:      http.StatusConflict,
}

// envelope is the one error body of CONTRACT §4.
type envelope struct {
	Detail string                  `json:"detail"`
	Code   string                  `json:"code"`
	Errors []dataimport.FieldError `json:"errors,omitempty"`
}

// abortWithError renders err in the envelope and stops the handler chain.
// Domain errors keep their code; an outage of Postgres or Redis is a 503 so
// that partners retry; data the database refused (SQLSTATE class 22 or 23,
// which validation should have caught) is a 400 data_refused, since a retry
// would fail the same way; anything else is logged and answered 500 without
// internals.
func abortWithError(c *gin.Context, err error) {
	e, ok := dataimport.AsError(err)
	if !ok {
		if c.Request.Context().Err() != nil {
			// The caller hung up; nobody reads this answer, and it is not our failure.
			logger(c).InfoContext(c.Request.Context(), "client went away", "err", err.Error())
			c.AbortWithStatus(499)
			return
		}
		if refused := postgres.DataRefused(err); refused != nil {
			logger(c).WarnContext(c.Request.Context(), "data refused by the database past validation", "err", err.Error())
			renderError(c, refused)
			return
		}
		if unavailable(err) {
			logger(c).WarnContext(c.Request.Context(), "dependency unavailable", "err", err.Error())
			e = &dataimport.Error{Code: dataimport.CodeServiceUnavailable,
				Detail: "A service this request needs is temporarily unavailable. Retry shortly.", RetryAfterSeconds: 5}
		} else {
			logger(c).ErrorContext(c.Request.Context(), "request failed", "err", err.Error())
			e = &dataimport.Error{Code: dataimport.CodeServerError, Detail: "An unexpected error occurred. Retry the request as it is."}
		}
	}
	renderError(c, e)
}

func renderError(c *gin.Context, e *dataimport.Error) {
	status := errorStatus(e)
	if status == http.StatusBadRequest || status == http.StatusConflict {
		onRefusal(c, e)
	}
	if e.RetryAfterSeconds > 0 {
		c.Header("Retry-After", strconv.Itoa(e.RetryAfterSeconds))
	}
	c.Set(ctxErrorCode, e.Code)
	c.AbortWithStatusJSON(status, envelopeBody(e))
}

func errorStatus(e *dataimport.Error) int {
	if status, ok := statusByCode[e.Code]; ok {
		return status
	}
	return http.StatusBadRequest
}

// envelopeBody is the body renderError answers e with.
func envelopeBody(e *dataimport.Error) any {
	if len(e.Extra) == 0 {
		return envelope{Detail: e.Detail, Code: e.Code, Errors: e.Errors}
	}
	body := gin.H{"detail": e.Detail, "code": e.Code}
	if len(e.Errors) > 0 {
		body["errors"] = e.Errors
	}
	for k, v := range e.Extra {
		if _, taken := body[k]; !taken {
			body[k] = v
		}
	}
	return body
}

// ctxOnRefusal holds a func(*dataimport.Error) that renderError calls
// before answering a refusal (400, 409): post-import endpoints record it in
// the account's timeline.
const ctxOnRefusal = "on_refusal"

func onRefusal(c *gin.Context, e *dataimport.Error) {
	if f, ok := c.Get(ctxOnRefusal); ok {
		f.(func(*dataimport.Error))(e)
	}
}

// unavailable reports errors that mean a dependency cannot be reached, as
// opposed to a bug: connection refused, reset, timeouts, pool closed.
func unavailable(err error) bool {
	var connErr *pgconn.ConnectError
	var netErr net.Error
	var opErr *net.OpError
	switch {
	case errors.As(err, &connErr), errors.As(err, &opErr), errors.As(err, &netErr):
		return true
	case errors.Is(err, driver.ErrBadConn), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, context.DeadlineExceeded),
		// A server that goes away mid-conversation (Postgres shutting down).
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08 connection exceptions, 57P01-03 admin shutdown / cannot connect now.
		return pgErr.Code[:2] == "08" || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	return pgconn.SafeToRetry(err) || pgconn.Timeout(err)
}
