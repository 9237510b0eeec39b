package jobs_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gridshift/dataimport/jobs"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// TestBulkJobMetrics: the worker's bulk-job gauges show jobs by state and
// the lines of unfinished jobs by outcome, read from the job rows.
func TestBulkJobMetrics(t *testing.T) {
	d := testutil.NewDatabase(t)
	g := d.DB.Gorm()
	for _, q := range []string{
		`INSERT INTO import_suppliers (code, status) VALUES ('ACME', 'Ongoing')`,
		`INSERT INTO organisations (name) VALUES ('Partner')`,
		`INSERT INTO import_jobs (organisation_id, supplier_id, state, n_received, n_pending, n_invalid, n_created, n_in_progress)
		 SELECT o.id, s.id, st, 100, 10, 5, 80, 5 FROM organisations o, import_suppliers s,
		        unnest(ARRAY['PROCESSING', 'PROCESSING', 'COMPLETED', 'RECEIVING']) st`,
	} {
		if err := g.Exec(q).Error; err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(&jobs.BulkJobCollector{Store: d.DB})
	want := `
# HELP dataimport_bulk_jobs Bulk import jobs by state.
# TYPE dataimport_bulk_jobs gauge
dataimport_bulk_jobs{state="CANCELLED"} 0
dataimport_bulk_jobs{state="COMPLETED"} 1
dataimport_bulk_jobs{state="FAILED"} 0
dataimport_bulk_jobs{state="PROCESSING"} 2
dataimport_bulk_jobs{state="RECEIVING"} 1
# HELP dataimport_bulk_job_lines Lines of the bulk jobs still receiving or processing, by outcome so far.
# TYPE dataimport_bulk_job_lines gauge
dataimport_bulk_job_lines{outcome="already_imported"} 0
dataimport_bulk_job_lines{outcome="cancelled"} 0
dataimport_bulk_job_lines{outcome="created"} 240
dataimport_bulk_job_lines{outcome="duplicate_line"} 0
dataimport_bulk_job_lines{outcome="failed"} 0
dataimport_bulk_job_lines{outcome="in_progress"} 15
dataimport_bulk_job_lines{outcome="invalid"} 15
dataimport_bulk_job_lines{outcome="pending"} 30
dataimport_bulk_job_lines{outcome="staged"} 0
`
	if err := promtest.GatherAndCompare(reg, strings.NewReader(want), "dataimport_bulk_jobs", "dataimport_bulk_job_lines"); err != nil {
		t.Error(err)
	}
}
