package sdk

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gridshift/dataimport/sdk/go/client"
)

// APIError is an answer of 400 or more, decoded from the API's one error
// envelope ({"detail", "code", "errors": [...]}). Code is stable; Detail is
// for people; Errors lists every field error, each with the path of the
// input it is about (Attr). Body keeps the raw answer for the few errors
// that add fields: read them with Decode.
//
// The transactions endpoint's error ({"status": "TRANSACTION_IMPORT_ERROR",
// "error_detail": ...}) gives Code from status and Detail from
// error_detail.
type APIError struct {
	StatusCode int
	Code       string
	Detail     string
	Errors     []client.FieldError
	RequestID  string
	RetryAfter time.Duration // when the API sent Retry-After
	Body       []byte
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "data-import API: %d %s: %s", e.StatusCode, e.Code, e.Detail)
	for i, fe := range e.Errors {
		if i == 3 {
			fmt.Fprintf(&b, " (and %d more)", len(e.Errors)-3)
			break
		}
		fmt.Fprintf(&b, "; %s: %s (%s)", fe.Attr, fe.Detail, fe.Code)
	}
	return b.String()
}

// Decode reads the raw answer into v, for the fields some errors add to
// the envelope: client.AccountAlreadyImportedError (the platform account
// number), client.TransactionImportError (the transaction refused), ...
func (e *APIError) Decode(v any) error {
	if err := json.Unmarshal(e.Body, v); err != nil {
		return fmt.Errorf("sdk: decode %d %s answer: %w", e.StatusCode, e.Code, err)
	}
	return nil
}

// NewAPIError decodes an error answer. A body that is not the envelope
// (a proxy's HTML page, say) still gives a code, "http_<status>".
func NewAPIError(resp *http.Response, body []byte) *APIError {
	e := &APIError{StatusCode: resp.StatusCode, RequestID: resp.Header.Get("X-Request-ID"), Body: body}
	if d, ok := retryAfter(resp.Header); ok {
		e.RetryAfter = d
	}
	var env struct {
		Code        string              `json:"code"`
		Detail      string              `json:"detail"`
		Errors      []client.FieldError `json:"errors"`
		Status      string              `json:"status"`
		ErrorDetail string              `json:"error_detail"`
	}
	if err := json.Unmarshal(body, &env); err == nil && env.Code == "" {
		env.Code = env.Status // the transactions endpoint
	}
	if env.Detail == "" {
		env.Detail = env.ErrorDetail
	}
	if env.Code != "" {
		e.Code, e.Detail, e.Errors = env.Code, env.Detail, env.Errors
	} else {
		e.Code = "http_" + strconv.Itoa(resp.StatusCode)
		e.Detail = strings.TrimSpace(string(body))
		if len(e.Detail) > 300 {
			e.Detail = e.Detail[:300] + "…"
		}
	}
	return e
}

// check turns a generated response into an error when it is not 2xx.
func check(resp *http.Response, body []byte) error {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	return NewAPIError(resp, body)
}
