package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// MaxValidateLines caps the accounts of one validate-accounts request
// (besides MAX_BODY_BYTES): one request answers in seconds, not minutes.
const MaxValidateLines = 1000

// validateAccountsPath takes NDJSON, so it is routed outside the v1 group,
// whose body rules accept JSON only (server.go).
const validateAccountsPath = "/v1/data-import/validate-accounts/"

// validateResult is one line of the validate-accounts answer.
type validateResult struct {
	Line                  int                     `json:"line"`
	ExternalAccountNumber string                  `json:"external_account_number,omitempty"`
	Valid                 bool                    `json:"valid"`
	Code                  string                  `json:"code,omitempty"`
	Detail                string                  `json:"detail,omitempty"`
	Errors                []dataimport.FieldError `json:"errors"`
}

// validateAccounts serves POST /validate-accounts/: each line of an NDJSON
// body (one account per line, as jobs take) through validate-account's own
// validation — the account's supplier's phone region, market and
// catalogue — answered as NDJSON, one result per non-blank line in order.
// Nothing is staged or recorded: it is a dry run for migrator convert
// --validate --remote and partners' own checks.
func (s *Server) validateAccounts(c *gin.Context) {
	body := requestBody(c)
	lines := bytes.Split(body, []byte("\n"))
	n := 0
	for _, l := range lines {
		if len(bytes.TrimSpace(l)) > 0 {
			n++
		}
	}
	if n > MaxValidateLines {
		failValidation(c, dataimport.CodeInvalidPayload, "Too many accounts.", []dataimport.FieldError{{Attr: "body", Code: dataimport.CodeMaxLength,
			Detail: fmt.Sprintf("Send at most %d accounts (lines) per request; this body has %d.", MaxValidateLines, n)}})
		return
	}
	results := make([]validateResult, 0, n)
	for i, l := range lines {
		l = bytes.TrimRight(l, "\r")
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		res := validateResult{Line: i + 1, Errors: []dataimport.FieldError{}}
		acc, _, err := s.decodeAccountBody(c, l)
		if err == nil {
			res.Valid, res.ExternalAccountNumber = true, acc.ExternalAccountNumber
			results = append(results, res)
			continue
		}
		e, ok := dataimport.AsError(err)
		if !ok {
			abortWithError(c, err) // the store failing: no partial answer
			return
		}
		res.ExternalAccountNumber = lenientExternal(l)
		res.Code, res.Detail = e.Code, e.Detail
		if e.Errors != nil {
			res.Errors = e.Errors
		}
		results = append(results, res)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	for _, res := range results {
		if err := enc.Encode(res); err != nil {
			abortWithError(c, fmt.Errorf("encode validation result: %w", err))
			return
		}
	}
	c.Data(http.StatusOK, "application/x-ndjson", out.Bytes())
}
