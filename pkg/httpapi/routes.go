package httpapi

import (
	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// routes lists every data-import endpoint; each handler's file is named after it.
func (s *Server) routes(g *gin.RouterGroup) {
	g.POST("/validate-account/", s.validateAccount)
	g.POST("/account-import-process/create-or-update/", s.stageAccount)
	g.POST("/account-import-process/process/", s.createAccount)
	g.GET("/account-transfer-status/:supplier/:external/", s.accountStatus)
	g.GET("/all-account-import-processes/:supplier/", s.listProcesses(postgres.ListAll))
	g.GET("/pending-account-import-processes/:supplier/", s.listProcesses(postgres.ListPending))
	g.GET("/imported-account-import-processes/:supplier/", s.listProcesses(postgres.ListImported))
	g.GET("/events/", s.eventFeed)
	g.GET("/failures/", s.listFailures)
	g.GET("/failures/summary/", s.failureSummary)
	g.GET("/reconciliation/", s.reconciliation)
	g.GET("/reconciliation/accounts/", s.landedAccounts)
	g.POST("/payment-instruction/create/", s.createPaymentInstruction)
	g.POST("/notes/create/", s.createNotes)
	g.POST("/transactions/create/", s.createTransactions)
	g.POST("/historical-statements/create/", s.createHistoricalStatements)
	g.POST("/validate-products/", s.validateProducts)
	g.POST("/products/create-or-update/", s.requireScope(dataimport.ScopeProducts), s.upsertProducts)
	g.GET("/products/", s.listProducts)
	g.GET("/products/:code/", s.product)
	g.POST("/webhooks/", s.createWebhook)
	g.GET("/webhooks/", s.listWebhooks)
	g.GET("/webhooks/:id/", s.showWebhook)
	g.PATCH("/webhooks/:id/", s.patchWebhook)
	g.POST("/webhooks/:id/rotate-secret/", s.rotateWebhookSecret)
	g.POST("/webhooks/:id/test/", s.testWebhook)
	g.GET("/webhooks/:id/attempts/", s.webhookAttempts)
}

// routesV2 lists the asynchronous (v2) endpoints (v2.go).
func (s *Server) routesV2(g *gin.RouterGroup) {
	g.POST("/accounts/validate/", s.validateV2)
	g.POST("/accounts/", s.createV2)
	g.GET("/accounts/:supplier/:external/", s.statusV2)
	g.GET("/accounts/:supplier/:external/events/", s.eventsV2)
	g.POST("/accounts/:supplier/:external/cancel/", s.cancelV2)
}

// publicRoutes are served without authentication: the OpenAPI document of
// the routes above and the documentation page that renders it.
func (s *Server) publicRoutes(e *gin.Engine) {
	e.GET("/", serveIndex)
	e.GET(OpenAPIPath, serveOpenAPI)
	e.GET("/docs", serveDocsPage)
	e.GET("/docs/:asset", serveDocsAsset)
}
