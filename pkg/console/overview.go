package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/queue"
)

// Overview is everything the overview page shows.
type Overview struct {
	Suppliers   []postgres.SupplierCounts
	Totals      postgres.SupplierCounts
	InProgress  int64 // accounts holding a slot, cluster-wide
	Limit       int
	LimitOn     bool
	Caps        []postgres.NamedCap // per supplier and organisation, inside Limit
	QueueDepth  int                 // accounts queue: pending + scheduled + retry + active
	QueueError  string
	Processes   ReplicaSection // API and worker processes from their heartbeats
	Webhooks    []WebhookEndpoint
	WebhooksOff bool
	BulkJobs    []BulkJob
	BulkJobsOff bool
	At          time.Time
}

// overviewCache computes the overview at most once per OverviewCacheTTL per
// process: every operator's poll within it shares one computation.
type overviewCache struct {
	mu   sync.Mutex
	at   time.Time
	last Overview
}

// LoadOverview computes the overview (uncached); the benchmark times it.
func (c *Console) LoadOverview(ctx context.Context) (Overview, error) {
	db := c.deps.Store
	ov := Overview{At: time.Now().UTC()}
	var err error
	if ov.Suppliers, err = db.OverviewCounts(ctx); err != nil {
		return ov, err
	}
	for _, s := range ov.Suppliers {
		t := &ov.Totals
		t.Staged += s.Staged
		t.Scheduled += s.Scheduled
		t.InProgress += s.InProgress
		t.Completed += s.Completed
		t.Errored += s.Errored
		t.Cancelled += s.Cancelled
		t.DryRuns += s.DryRuns
		if s.OldestInProgress != nil && (t.OldestInProgress == nil || s.OldestInProgress.Before(*t.OldestInProgress)) {
			t.OldestInProgress = s.OldestInProgress
		}
	}
	ov.InProgress = ov.Totals.InProgress
	if ov.Limit, ov.LimitOn, err = db.ConcurrencyLimit(ctx); err != nil {
		return ov, err
	}
	if ov.Caps, err = db.NamedConcurrencyCaps(ctx); err != nil {
		return ov, err
	}
	if c.deps.Inspector != nil {
		if qi, err := c.deps.Inspector.GetQueueInfo(queue.QueueAccounts); err != nil {
			if !strings.Contains(err.Error(), "not found") {
				ov.QueueError = err.Error()
			}
		} else {
			ov.QueueDepth = qi.Pending + qi.Scheduled + qi.Retry + qi.Active
		}
	}
	ov.Processes = c.loadReplicas(ctx)
	if c.deps.Webhooks == nil {
		ov.WebhooksOff = true
	} else if ov.Webhooks, err = c.deps.Webhooks(ctx); err != nil {
		return ov, err
	}
	if c.deps.BulkJobs == nil {
		ov.BulkJobsOff = true
	} else if ov.BulkJobs, err = c.deps.BulkJobs(ctx); err != nil {
		return ov, err
	}
	return ov, nil
}

func (c *Console) cachedOverview(ctx context.Context) (Overview, error) {
	c.overview.mu.Lock()
	defer c.overview.mu.Unlock()
	if time.Since(c.overview.at) < c.cfg.OverviewCacheTTL {
		return c.overview.last, nil
	}
	ov, err := c.LoadOverview(ctx)
	if err != nil {
		return ov, err
	}
	c.overview.at, c.overview.last = time.Now(), ov
	return ov, nil
}

// invalidateOverview makes the next view recompute (after an operator's own change).
func (c *Console) invalidateOverview() {
	c.overview.mu.Lock()
	c.overview.at = time.Time{}
	c.overview.mu.Unlock()
}

func (c *Console) overviewPage(w http.ResponseWriter, r *http.Request) {
	ov, err := c.cachedOverview(r.Context())
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "overview", map[string]any{"Overview": ov, "Flash": r.URL.Query().Get("done")})
}

// overviewLive is the fragment htmx polls every 2 seconds.
func (c *Console) overviewLive(w http.ResponseWriter, r *http.Request) {
	ov, err := c.cachedOverview(r.Context())
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "live", map[string]any{"Overview": ov})
}

// chartWindow is how far back the accounts-per-minute chart goes.
const chartWindow = 3 * time.Hour

// chartData is accounts created per minute and supplier over the last
// hours, one series per supplier, for Chart.js.
func (c *Console) chartData(w http.ResponseWriter, r *http.Request) {
	end := time.Now().UTC().Truncate(time.Minute)
	start := end.Add(-chartWindow + time.Minute)
	rows, err := c.deps.Store.CreatedPerMinute(r.Context(), start)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	n := int(chartWindow / time.Minute)
	labels := make([]string, n)
	for i := range labels {
		labels[i] = start.Add(time.Duration(i) * time.Minute).Format("15:04")
	}
	series := map[string][]int64{}
	var order []string
	for _, row := range rows {
		s, ok := series[row.Supplier]
		if !ok {
			s = make([]int64, n)
			order = append(order, row.Supplier)
		}
		if i := int(row.Minute.UTC().Sub(start) / time.Minute); i >= 0 && i < n {
			s[i] += row.N
		}
		series[row.Supplier] = s
	}
	type dataset struct {
		Label string  `json:"label"`
		Data  []int64 `json:"data"`
	}
	out := struct {
		Labels   []string  `json:"labels"`
		Datasets []dataset `json:"datasets"`
	}{Labels: labels, Datasets: []dataset{}}
	for _, s := range order {
		out.Datasets = append(out.Datasets, dataset{Label: s, Data: series[s]})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// setLimit sets (a whole number ≥ 1) or clears (empty, or "off") the
// cluster-wide cap: the same store call as `importctl limit`, announced to
// every API replica through NOTIFY.
func (c *Console) setLimit(w http.ResponseWriter, r *http.Request) {
	raw := strings.TrimSpace(r.PostFormValue("limit"))
	n := 0
	if raw != "" && !strings.EqualFold(raw, "off") {
		v, err := strconv.Atoi(raw)
		if err != nil || v < 1 || v > 1_000_000 {
			http.Error(w, fmt.Sprintf("limit %q: give a whole number from 1 to 1000000, or leave it empty to turn the limit off", raw), http.StatusBadRequest)
			return
		}
		n = v
	}
	if err := c.deps.Store.SetConcurrencyLimit(r.Context(), n); err != nil {
		c.fail(w, r, err)
		return
	}
	c.invalidateOverview()
	msg := "limit off"
	if n > 0 {
		msg = "limit set to " + strconv.Itoa(n)
	}
	redirect(w, r, "/?done="+urlQuery(msg))
}

// setCap sets (a whole number ≥ 1) or removes (empty, or "off") one
// supplier's or organisation's cap inside the cluster-wide one: the same
// store call as `importctl limit set --supplier/--org`.
func (c *Console) setCap(w http.ResponseWriter, r *http.Request) {
	scope := postgres.CapScope(r.PostFormValue("scope"))
	name := strings.TrimSpace(r.PostFormValue("name"))
	if (scope != postgres.CapSupplier && scope != postgres.CapOrganisation) || name == "" {
		http.Error(w, "choose supplier or organisation and give its code or name", http.StatusBadRequest)
		return
	}
	raw := strings.TrimSpace(r.PostFormValue("limit"))
	n := 0
	if raw != "" && !strings.EqualFold(raw, "off") {
		v, err := strconv.Atoi(raw)
		if err != nil || v < 1 || v > 1_000_000 {
			http.Error(w, fmt.Sprintf("cap %q: give a whole number from 1 to 1000000, or leave it empty to remove the cap", raw), http.StatusBadRequest)
			return
		}
		n = v
	}
	if err := c.deps.Store.SetConcurrencyCap(r.Context(), scope, name, n); err != nil {
		if errors.Is(err, postgres.ErrCapSubjectNotFound) {
			http.Error(w, fmt.Sprintf("no %s named %q", scope, name), http.StatusNotFound)
			return
		}
		c.fail(w, r, err)
		return
	}
	c.invalidateOverview()
	msg := fmt.Sprintf("cap of %s %s removed", scope, name)
	if n > 0 {
		msg = fmt.Sprintf("cap of %s %s set to %d", scope, name, n)
	}
	redirect(w, r, "/?done="+urlQuery(msg))
}
