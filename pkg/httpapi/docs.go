package httpapi

import (
	"embed"
	"net/http"
	"path"

	"github.com/gin-gonic/gin"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// OpenAPIPath is where the OpenAPI document is served (CONTRACT §1).
const OpenAPIPath = "/v1/data-import/openapi.json"

//go:embed openapi/openapi.json
var openAPIDocument []byte

// docsFiles is the documentation page and the Swagger UI bundle it loads,
// vendored so that /docs works offline (see docs/README.md).
//
//go:embed docs/index.html docs/swagger-ui-bundle.js docs/swagger-ui.css
var docsFiles embed.FS

// OpenAPIDocument returns the OpenAPI document of every endpoint the router
// serves. The contract tests validate real responses against it.
func OpenAPIDocument() []byte { return openAPIDocument }

func serveOpenAPI(c *gin.Context) {
	c.Data(http.StatusOK, "application/json; charset=utf-8", openAPIDocument)
}

func serveDocsPage(c *gin.Context) {
	serveDocsFile(c, "index.html", "text/html; charset=utf-8")
}

// docsAssetTypes lists the files /docs/<asset> serves, with their types.
var docsAssetTypes = map[string]string{
	"swagger-ui-bundle.js": "text/javascript; charset=utf-8",
	"swagger-ui.css":       "text/css; charset=utf-8",
}

func serveDocsAsset(c *gin.Context) {
	name := c.Param("asset")
	ct, ok := docsAssetTypes[name]
	if !ok {
		renderError(c, dataimport.Errorf(dataimport.CodeNotFound, "Not found."))
		return
	}
	serveDocsFile(c, name, ct)
}

func serveDocsFile(c *gin.Context, name, contentType string) {
	b, err := docsFiles.ReadFile(path.Join("docs", name))
	if err != nil {
		abortWithError(c, err)
		return
	}
	c.Header("Cache-Control", "public, max-age=3600")
	c.Data(http.StatusOK, contentType, b)
}

// serveIndex answers GET / with where to start, not a bare 404.
func serveIndex(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"service": "data-import", "docs": "/docs", "openapi": OpenAPIPath,
		"health": "/healthz", "ready": "/readyz"})
}
