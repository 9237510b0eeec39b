package httpapi

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/auth"
)

// authBody is the 401 body of CONTRACT §3.
type authBody struct {
	Detail string `json:"detail"`
	Code   string `json:"code"`
}

// authenticate resolves the caller from "Authorization: Token <t>" (or a bare
// token) and stores it in the request context.
func (s *Server) authenticate() gin.HandlerFunc {
	return func(c *gin.Context) {
		p, err := s.deps.Auth.Authenticate(c.Request.Context(), c.GetHeader("Authorization"))
		if err != nil {
			var body authBody
			switch {
			case errors.Is(err, auth.ErrNoCredentials):
				body = authBody{"Authentication credentials were not provided.", "not_authenticated"}
			case errors.Is(err, auth.ErrTokenExpired):
				body = authBody{"The access token has expired; obtain a new one.", "token_expired"}
			case errors.Is(err, auth.ErrTokenInvalid), errors.Is(err, auth.ErrKeyRevoked):
				body = authBody{"Invalid access token.", "authentication_failed"}
			default:
				abortWithError(c, err)
				return
			}
			c.Header("WWW-Authenticate", `Token realm="data-import"`)
			c.Set(ctxErrorCode, body.Code)
			c.AbortWithStatusJSON(http.StatusUnauthorized, body)
			return
		}
		c.Request = c.Request.WithContext(auth.WithPrincipal(c.Request.Context(), p))
		c.Next()
	}
}

// principal returns the caller set by authenticate.
func principal(c *gin.Context) auth.Principal {
	p, _ := auth.PrincipalFrom(c.Request.Context())
	return p
}
