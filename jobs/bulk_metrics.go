package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// JobGaugeReader reads what the bulk-job metrics show.
type JobGaugeReader interface {
	ReadJobGauges(ctx context.Context) (postgres.JobGauges, error)
}

// BulkJobCollector serves bulk jobs' progress on the worker's /metrics,
// read from Postgres at each scrape (the counters live there, so every
// replica reports the same cluster-wide figures).
type BulkJobCollector struct {
	Store JobGaugeReader
	Log   *slog.Logger
}

var (
	bulkJobsDesc  = prometheus.NewDesc("dataimport_bulk_jobs", "Bulk import jobs by state.", []string{"state"}, nil)
	bulkLinesDesc = prometheus.NewDesc("dataimport_bulk_job_lines",
		"Lines of the bulk jobs still receiving or processing, by outcome so far.", []string{"outcome"}, nil)
)

// Describe implements prometheus.Collector.
func (c *BulkJobCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- bulkJobsDesc
	ch <- bulkLinesDesc
}

// Collect implements prometheus.Collector; a failed read reports nothing
// for this scrape (the gap shows) and logs why.
func (c *BulkJobCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	g, err := c.Store.ReadJobGauges(ctx)
	if err != nil {
		if c.Log != nil {
			c.Log.WarnContext(ctx, "bulk job metrics unavailable", "err", err.Error())
		}
		return
	}
	for _, s := range []dataimport.JobState{dataimport.JobReceiving, dataimport.JobProcessing, dataimport.JobCompleted,
		dataimport.JobFailed, dataimport.JobCancelled} {
		ch <- prometheus.MustNewConstMetric(bulkJobsDesc, prometheus.GaugeValue, float64(g.Jobs[s]), string(s))
	}
	for outcome, n := range g.Lines {
		ch <- prometheus.MustNewConstMetric(bulkLinesDesc, prometheus.GaugeValue, float64(n), outcome)
	}
}
