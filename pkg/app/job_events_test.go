package app_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// A job's end reaches the partner (CONTRACT §13): job.completed-v1,
// job.failed-v1 and job.cancelled-v1, each with the job's counters as they
// stood and the address of its failures summary, in the pull feed and
// through a webhook subscribed to them; only the organisation that owns the
// job sees them, even where another is granted the same supplier.
func TestJobEndEventsReachFeedAndWebhooks(t *testing.T) {
	recv := newHookReceiver(t)
	p := newPipeline(t, hookWorker(true), func(c *testutil.StackConfig) { c.JobInvalidCheckAfter = 100 })
	other := p.Tenant("Other Org", "DEMO_ENERGY")
	_, secret := addHook(t, p.Stack, "Demo Partner", recv.URL, "--events", "job.completed-v1,job.failed-v1,job.cancelled-v1")
	recv.useSecret(t, secret)
	p.StartWorker()
	const query = "import_supplier=DEMO_ENERGY&operations_team_name=Migrations"

	// COMPLETED: 8 created, 2 invalid.
	var body strings.Builder
	for i := range 10 {
		if i%5 == 4 {
			body.WriteString(p.invalidJobLine(fmt.Sprintf("EV-BAD-%d", i)))
		} else {
			body.WriteString(p.jobAccountLine(fmt.Sprintf("EV-OK-%d", i)))
		}
		body.WriteString("\n")
	}
	// It declares 10 accounts and receives 8 valid ones: a mismatch its
	// event must say.
	completed := acceptedJob(t, p.postJob(p.token, query+"&expected_accounts=10", strings.NewReader(body.String()), false))
	if v := p.waitJob(p.token, completed, time.Minute); v.State != "COMPLETED" {
		t.Fatalf("job %d %s %v", completed, v.State, v.Counters)
	}

	// CANCELLED: a job with a schedule window in the future, cancelled
	// before it starts.
	var later strings.Builder
	for i := range 3 {
		later.WriteString(p.jobAccountLine(fmt.Sprintf("EV-LATER-%d", i)) + "\n")
	}
	start := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	cancelled := acceptedJob(t, p.postJob(p.token, query+"&schedule_window_start="+start, strings.NewReader(later.String()), false))
	if r := p.As(p.token, http.MethodPost, fmt.Sprintf("%s%d/cancel/", jobsURL, cancelled), nil); r.Status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}

	// FAILED: stopped by the invalid-ratio brake.
	var bad strings.Builder
	for range 200 {
		bad.WriteString("1\n")
	}
	if r := p.postJob(p.token, query, strings.NewReader(bad.String()), false); r.Status != http.StatusBadRequest {
		t.Fatalf("mostly invalid upload: %d %s", r.Status, r.Body)
	}
	var failed int64
	must(t, p.DB.Gorm().Raw(`SELECT max(id) FROM import_jobs WHERE state = 'FAILED'`).Scan(&failed).Error)

	want := map[string]struct {
		job   int64
		state string
	}{"job.completed-v1": {completed, "COMPLETED"}, "job.cancelled-v1": {cancelled, "CANCELLED"}, "job.failed-v1": {failed, "FAILED"}}
	check := func(how string, got []feedItem) {
		t.Helper()
		if len(got) != 3 {
			t.Fatalf("%s: %d job events, want 3: %+v", how, len(got), got)
		}
		for _, e := range got {
			w, ok := want[e.Type]
			if !ok || e.Data.JobID != w.job || e.Data.State != w.state || e.Data.ImportSupplier != "DEMO_ENERGY" ||
				e.Data.ExternalAccountNumber != "" {
				t.Errorf("%s: event %+v, want job %d %s", how, e, w.job, w.state)
				continue
			}
			// The counters are the job's own, as its view shows them.
			v := p.job(p.token, w.job)
			if fmt.Sprint(e.Data.Counters) != fmt.Sprint(v.Counters) {
				t.Errorf("%s: %s counters %v, job view %v", how, e.Type, e.Data.Counters, v.Counters)
			}
			if e.Data.Reconciliation != v.Reconciliation || fmt.Sprint(e.Data.Control) != fmt.Sprint(v.Control) {
				t.Errorf("%s: %s control %+v %s, job view %+v %s", how, e.Type, e.Data.Control, e.Data.Reconciliation, v.Control, v.Reconciliation)
			}
			wantURL := fmt.Sprintf("/v1/data-import/failures/summary/?import_supplier=DEMO_ENERGY&job=%d", w.job)
			if e.Data.FailuresSummaryURL != wantURL {
				t.Errorf("%s: failures_summary_url %q, want %q", how, e.Data.FailuresSummaryURL, wantURL)
			}
		}
	}
	types := "&type=job.completed-v1&type=job.failed-v1&type=job.cancelled-v1"
	got, _ := followFeed(t, p.Stack, p.token, "", 100, 3, 30*time.Second, types)
	check("feed", got)
	if v := p.job(p.token, completed); v.Counters["created"] != 8 || v.Counters["invalid"] != 2 || v.Reconciliation != "mismatch" {
		t.Errorf("completed job counters %v, reconciliation %q", v.Counters, v.Reconciliation)
	}

	// The summary's address answers, and names the two invalid lines.
	r := p.As(p.token, http.MethodGet, fmt.Sprintf("/v1/data-import/failures/summary/?import_supplier=DEMO_ENERGY&job=%d", completed), nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"unresolved":2`) {
		t.Errorf("failures summary of the completed job: %d %s", r.Status, r.Body)
	}

	delivered := recv.waitDelivered(t, 3, 30*time.Second, func() string { return "" })
	var hooks []feedItem
	for _, e := range delivered {
		hooks = append(hooks, e)
	}
	check("webhook", hooks)

	// Another organisation granted the same supplier sees none of them.
	if a := readFeed(t, p.Stack, other.Token, strings.TrimPrefix(types, "&")); len(a.Events) != 0 {
		t.Errorf("another organisation reads the job events: %+v", a.Events)
	}
	// All the feed's events of this organisation are the jobs' and the
	// accounts' — an account event is never mistaken for a job's.
	for _, e := range readFeed(t, p.Stack, p.token, "limit=1000").Events {
		isJob := strings.HasPrefix(e.Type, "job.")
		if isJob != (e.Data.JobID != 0) || isJob == (e.Data.ExternalAccountNumber != "") {
			t.Errorf("event %s: job_id %d, external %q", e.Type, e.Data.JobID, e.Data.ExternalAccountNumber)
		}
	}
	var n int64
	must(t, p.DB.Gorm().WithContext(context.Background()).Raw(`SELECT count(*) FROM import_process_events WHERE process_id IS NULL`).Scan(&n).Error)
	if n != 3 {
		t.Errorf("%d job events in the log, want 3 (one per job's end)", n)
	}
}
