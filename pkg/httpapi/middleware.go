package httpapi

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"regexp"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/logging"
)

const (
	headerRequestID = "X-Request-ID"
	ctxErrorCode    = "error_code"
	ctxBody         = "request_body"
	ctxLogger       = "logger"
)

// logger is the service's logger for this request (it adds the request ID).
func logger(c *gin.Context) *slog.Logger {
	if l, ok := c.Get(ctxLogger); ok {
		return l.(*slog.Logger)
	}
	return slog.Default()
}

// A caller's request ID is echoed only when it is short and printable, so it
// cannot inject into logs or headers.
var requestIDRe = regexp.MustCompile(`^[A-Za-z0-9._:/+=-]{1,128}$`)

// requestID makes sure every request has an ID, echoes it on the response and
// puts it in the context for logs.
func requestID() gin.HandlerFunc {
	return func(c *gin.Context) {
		id := c.GetHeader(headerRequestID)
		if !requestIDRe.MatchString(id) {
			id = uuid.NewString()
		}
		c.Header(headerRequestID, id)
		c.Request = c.Request.WithContext(logging.WithRequestID(c.Request.Context(), id))
		c.Next()
	}
}

// accessLog writes one JSON line per request. It never logs headers or
// bodies: they carry API keys, tokens and customer data.
func accessLog(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Set(ctxLogger, log)
		c.Next()
		status := c.Writer.Status()
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		attrs := []slog.Attr{
			slog.String("method", c.Request.Method),
			slog.String("route", c.FullPath()),
			slog.String("path", c.Request.URL.Path),
			slog.Int("status", status),
			slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
			slog.Int("bytes", c.Writer.Size()),
			slog.String("client_ip", c.ClientIP()),
		}
		if code := c.GetString(ctxErrorCode); code != "" {
			attrs = append(attrs, slog.String("error_code", code))
		}
		log.LogAttrs(c.Request.Context(), level, "http request", attrs...)
	}
}

// recoverPanics turns a panic into a 500 envelope; the stack goes to the log,
// never to the caller.
func recoverPanics(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				log.ErrorContext(c.Request.Context(), "panic serving request", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				renderError(c, &dataimport.Error{Code: dataimport.CodeServerError, Detail: "An unexpected error occurred. Retry the request as it is."})
			}
		}()
		c.Next()
	}
}

// bodyRules enforces JSON content type and MAX_BODY_BYTES before a handler
// reads anything. The body is read here, once, so that an oversized body is
// refused without buffering more than the limit.
func bodyRules(maxBytes int64) gin.HandlerFunc {
	return bodyRulesFor(maxBytes, func(mt string) bool { return mt == "application/json" || isJSONSuffix(mt) }, "application/json")
}

// ndjsonBodyRules are bodyRules for a body of JSON lines.
func ndjsonBodyRules(maxBytes int64) gin.HandlerFunc {
	return bodyRulesFor(maxBytes, func(mt string) bool { return ndjsonTypes[mt] }, "application/x-ndjson, one account per line")
}

func bodyRulesFor(maxBytes int64, accept func(mediaType string) bool, want string) gin.HandlerFunc {
	return func(c *gin.Context) {
		r := c.Request
		if r.Method != http.MethodPost && r.Method != http.MethodPut && r.Method != http.MethodPatch {
			c.Next()
			return
		}
		if r.ContentLength > maxBytes {
			renderError(c, tooLarge(maxBytes))
			return
		}
		if ct := r.Header.Get("Content-Type"); ct != "" || r.ContentLength > 0 {
			mt, _, err := mime.ParseMediaType(ct)
			if err != nil || !accept(mt) {
				renderError(c, dataimport.Errorf(dataimport.CodeUnsupportedMediaType,
					"Unsupported media type %q in request; send %s.", ct, want))
				return
			}
		}
		body, err := readBody(c.Writer, r, maxBytes)
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				renderError(c, tooLarge(maxBytes))
				return
			}
			renderError(c, dataimport.Errorf(dataimport.CodeParseError, "Could not read the request body."))
			return
		}
		c.Set(ctxBody, body)
		c.Next()
	}
}

// readBody reads the whole body, at most maxBytes. A body of known length
// goes into one buffer of that size; io.ReadAll would grow its buffer by
// doubling and allocate about twice the body.
func readBody(w http.ResponseWriter, r *http.Request, maxBytes int64) ([]byte, error) {
	rd := http.MaxBytesReader(w, r.Body, maxBytes)
	if r.ContentLength <= 0 {
		return io.ReadAll(rd)
	}
	// bytes.MinRead spare: ReadFrom wants that much room before each read,
	// including the last one that sees EOF.
	buf := bytes.NewBuffer(make([]byte, 0, r.ContentLength+bytes.MinRead))
	_, err := buf.ReadFrom(rd)
	return buf.Bytes(), err
}

func isJSONSuffix(mt string) bool {
	return len(mt) > 5 && mt[len(mt)-5:] == "+json"
}

func tooLarge(maxBytes int64) *dataimport.Error {
	return dataimport.Errorf(dataimport.CodeRequestTooLarge,
		"Request body is larger than the limit of %s bytes.", strconv.FormatInt(maxBytes, 10))
}

// requestBody returns the body read by bodyRules.
func requestBody(c *gin.Context) []byte {
	b, _ := c.Get(ctxBody)
	body, _ := b.([]byte)
	return body
}
