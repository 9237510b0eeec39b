package httpapi

import (
	"encoding/json"
	"math"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

type graphqlRequest struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
}

// loginFailureCodes are GraphQL errorCodes that count towards the per-client
// brute-force throttle.
var loginFailureCodes = map[any]bool{dataimport.CodeInvalidAPIKey: true, dataimport.CodeInvalidRefreshToken: true}

// graphql serves POST /v1/graphql/ (obtainToken). A client that failed too
// often in the last minute is refused with 429 before its key is even looked
// at, so guessing keys is slow from any number of API replicas.
func (s *Server) graphql(c *gin.Context) {
	ctx := c.Request.Context()
	client := c.ClientIP()
	if s.deps.Throttle != nil {
		blocked, wait, err := s.deps.Throttle.Blocked(ctx, client)
		if err != nil {
			// Failing open keeps logins working through a Redis outage;
			// keys carry 160 random bits, so a short window is harmless.
			logger(c).WarnContext(ctx, "login throttle unavailable", "err", err.Error())
		} else if blocked {
			renderError(c, &dataimport.Error{Code: dataimport.CodeThrottled,
				Detail:            "Too many failed authentication attempts. Retry later.",
				RetryAfterSeconds: int(math.Ceil(wait.Seconds()))})
			return
		}
	}
	var req graphqlRequest
	if err := json.Unmarshal(requestBody(c), &req); err != nil {
		renderError(c, dataimport.Errorf(dataimport.CodeParseError, "JSON parse error - %s", err.Error()))
		return
	}
	resp := s.deps.Schema.Exec(ctx, req.Query, req.OperationName, req.Variables)
	// Every failed guess counts, also those packed into one request under
	// aliases: a query full of obtainToken calls buys one long lock-out.
	failures := 0
	for _, e := range resp.Errors {
		if loginFailureCodes[e.Extensions["errorCode"]] {
			failures++
		}
	}
	if failures > 0 && s.deps.Throttle != nil {
		if err := s.deps.Throttle.Failed(ctx, client, failures); err != nil {
			logger(c).WarnContext(ctx, "login throttle unavailable", "err", err.Error())
		}
	}
	c.JSON(http.StatusOK, resp)
}
