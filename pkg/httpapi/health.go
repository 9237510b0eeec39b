package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
)

func healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// readyz answers 503 while a dependency (Postgres, Redis) cannot be reached,
// so load balancers stop sending traffic to a replica that cannot serve it.
func readyz(deps map[string]Pinger) gin.HandlerFunc {
	return func(c *gin.Context) {
		ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
		defer cancel()
		checks := gin.H{}
		ok := true
		for name, p := range deps {
			if err := p.Ping(ctx); err != nil {
				checks[name] = "unavailable"
				ok = false
				continue
			}
			checks[name] = "ok"
		}
		if !ok {
			c.JSON(http.StatusServiceUnavailable, gin.H{"detail": "Not ready.", "code": "service_unavailable", "checks": checks})
			return
		}
		c.JSON(http.StatusOK, gin.H{"status": "ok", "checks": checks})
	}
}

// ProbeHandler serves /healthz and /readyz for processes without the API
// (the worker), so every process can be probed the same way.
func ProbeHandler(deps map[string]Pinger, extra map[string]http.Handler) http.Handler {
	e := gin.New()
	e.Use(gin.Recovery())
	e.GET("/healthz", healthz)
	e.GET("/readyz", readyz(deps))
	for path, h := range extra {
		e.GET(path, gin.WrapH(h))
	}
	return e
}
