package console

import (
	"net/http"

	"github.com/gridshift/dataimport/pkg/postgres"
)

// retryFailures is "retry the failed creations matching this filter": the
// store's RetryFailedCreations (the same as importctl's), under the
// operator's name (audited as failures.retry in its transaction). The work
// runs through the job pipeline and scheduled attempts, under the
// cluster-wide cap; the page asks for confirmation before it posts and
// reports how many creations it re-runs.
func (c *Console) retryFailures(w http.ResponseWriter, r *http.Request) {
	code := r.PathValue("code")
	sup, err := c.deps.Store.SupplierByCode(r.Context(), code)
	if err != nil {
		c.notFoundOr(w, r, err)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "the form could not be read", http.StatusBadRequest)
		return
	}
	f, problem := parseFailureFilter(r.PostForm)
	if problem != "" {
		http.Error(w, problem, http.StatusBadRequest)
		return
	}
	if f.Source != "" && f.Source != postgres.FailureCreate {
		http.Error(w, "source: only failed creations are retried; refused data is fixed by sending it again", http.StatusBadRequest)
		return
	}
	f.Resolved, f.After = "", 0
	n, err := c.deps.Store.RetryFailedCreations(r.Context(), f.query(sup.ID, 0))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.invalidateOverview()
	v := f.values()
	v.Set("done", retriedText(n))
	redirect(w, r, failuresURL(code, failureFilter{})+"?"+v.Encode())
}

func retriedText(n int) string {
	if n == 1 {
		return "1 failed creation re-run"
	}
	return itoa(n) + " failed creations re-run"
}
