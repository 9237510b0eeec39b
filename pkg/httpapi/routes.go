package httpapi

import "github.com/gin-gonic/gin"

// routes lists every data-import endpoint; each handler's file is named after it.
func (s *Server) routes(g *gin.RouterGroup) {
	g.GET("/account-transfer-status/:supplier/:external/", s.accountStatus)
}
