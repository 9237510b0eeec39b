package httpapi

import (
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
)

// httpMetrics are the RED metrics per route. Route is gin's pattern, never the
// raw path, so cardinality stays bounded whatever partners send.
type httpMetrics struct {
	requests  *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	throttled prometheus.Counter
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dataimport_http_requests_total", Help: "HTTP requests by route, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "dataimport_http_request_duration_seconds", Help: "HTTP request latency by route and method.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "method"}),
	}
	m.throttled = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "dataimport_concurrency_limit_rejections_total", Help: "Create-account requests answered 429 by the concurrency limit.",
	})
	reg.MustRegister(m.requests, m.latency, m.throttled)
	return m
}

func (m *httpMetrics) middleware() gin.HandlerFunc {
	return func(c *gin.Context) {
		start := time.Now()
		c.Next()
		route := c.FullPath()
		if route == "" {
			route = "unmatched"
		}
		m.requests.WithLabelValues(route, c.Request.Method, strconv.Itoa(c.Writer.Status())).Inc()
		m.latency.WithLabelValues(route, c.Request.Method).Observe(time.Since(start).Seconds())
	}
}
