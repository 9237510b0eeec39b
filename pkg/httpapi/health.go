package httpapi

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strings"
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
		var reasons []string
		for name, p := range deps {
			if err := p.Ping(ctx); err != nil {
				checks[name] = "unavailable"
				ok = false
				if nr := (*NotReady)(nil); errors.As(err, &nr) {
					reasons = append(reasons, name+": "+nr.Reason)
				}
				continue
			}
			checks[name] = "ok"
		}
		if !ok {
			detail := "Not ready."
			if len(reasons) > 0 {
				sort.Strings(reasons)
				detail += " " + strings.Join(reasons, " ")
			}
			c.JSON(http.StatusServiceUnavailable, gin.H{"detail": detail, "code": "service_unavailable", "checks": checks})
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

// NotReady is a readiness check's own verdict (not an unreachable
// dependency): its Reason, written for operators, is added to the 503's
// detail. A worker that cannot serve a payment vendor the API accepts says
// which one.
type NotReady struct{ Reason string }

func (e *NotReady) Error() string { return "not ready: " + e.Reason }
