package console

import (
	"net/http"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// unskipAccount is the console's `importctl account unskip`: partners may
// stage and create the account again (audited in the store).
func (c *Console) unskipAccount(w http.ResponseWriter, r *http.Request) {
	code, external := r.PathValue("code"), r.PostFormValue("external")
	if external == "" {
		http.Error(w, "external: give the account's external number", http.StatusBadRequest)
		return
	}
	err := c.deps.Store.Unskip(r.Context(), code, external)
	if e, ok := dataimport.AsError(err); ok && e.Code == dataimport.CodeAccountNotSkipped {
		http.Error(w, e.Detail, http.StatusConflict)
		return
	}
	if err != nil {
		c.notFoundOr(w, r, err)
		return
	}
	c.invalidateOverview()
	redirect(w, r, accountURL(code, external)+"&done="+urlQuery("no longer skipped"))
}

// retryAccount is the console's `importctl account retry`: the account's
// failed creation runs again from its staged payload, started by a worker
// under the concurrency limit (audited in the store).
func (c *Console) retryAccount(w http.ResponseWriter, r *http.Request) {
	code, external := r.PathValue("code"), r.PostFormValue("external")
	if external == "" {
		http.Error(w, "external: give the account's external number", http.StatusBadRequest)
		return
	}
	_, err := c.deps.Store.RetryAccount(r.Context(), code, external)
	if e, ok := dataimport.AsError(err); ok && e.Code == dataimport.CodeAccountNotRetryable {
		http.Error(w, e.Detail, http.StatusConflict)
		return
	}
	if err != nil {
		c.notFoundOr(w, r, err)
		return
	}
	c.invalidateOverview()
	redirect(w, r, accountURL(code, external)+"&done="+urlQuery("creation re-run; a worker starts it under the concurrency limit"))
}
