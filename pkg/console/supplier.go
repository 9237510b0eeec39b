package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

func urlQuery(s string) string { return url.QueryEscape(s) }

func (c *Console) supplierPage(w http.ResponseWriter, r *http.Request) {
	code := r.PathValue("code")
	sup, err := c.deps.Store.SupplierByCode(r.Context(), code)
	if err != nil {
		c.notFoundOr(w, r, err)
		return
	}
	groups, err := c.deps.Store.SupplierErrors(r.Context(), code)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "supplier", map[string]any{"Supplier": sup, "Errors": groups,
		"Statuses": []dataimport.SupplierStatus{dataimport.SupplierOngoing, dataimport.SupplierPaused, dataimport.SupplierComplete},
		"Flash":    r.URL.Query().Get("done"), "NoFilter": failureFilter{}})
}

// setSupplierStatus is the console's `importctl supplier set-status`. The
// page asks for confirmation before it posts.
func (c *Console) setSupplierStatus(w http.ResponseWriter, r *http.Request) {
	code := r.PathValue("code")
	st, ok := dataimport.ParseSupplierStatus(r.PostFormValue("status"))
	if !ok {
		http.Error(w, "status: use Ongoing, Paused or Complete", http.StatusBadRequest)
		return
	}
	if err := c.deps.Store.SetSupplierStatus(r.Context(), code, st); err != nil {
		c.notFoundOr(w, r, err)
		return
	}
	c.invalidateOverview()
	redirect(w, r, supplierURL(code)+"?done="+urlQuery("status set to "+string(st)))
}

// setSupplierBrake is the console's `importctl supplier brake`.
func (c *Console) setSupplierBrake(w http.ResponseWriter, r *http.Request) {
	code := r.PathValue("code")
	var b *dataimport.Brake
	if r.PostFormValue("off") != "true" {
		bp, err := dataimport.ParseFailureRate(r.PostFormValue("failure_rate"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		window, err := strconv.Atoi(strings.TrimSpace(r.PostFormValue("window")))
		b = &dataimport.Brake{FailureBP: bp, Window: window}
		if err == nil {
			err = b.Validate()
		}
		if err != nil {
			http.Error(w, fmt.Sprintf("window: give %d to %d creation outcomes", dataimport.BrakeMinWindow, dataimport.BrakeMaxWindow), http.StatusBadRequest)
			return
		}
	}
	if _, err := c.deps.Store.SetSupplierBrake(r.Context(), code, b); err != nil {
		c.notFoundOr(w, r, err)
		return
	}
	done := "brake off"
	if b != nil {
		done = fmt.Sprintf("brake set: more than %s of the last %d", b.Rate(), b.Window)
	}
	redirect(w, r, supplierURL(code)+"?done="+urlQuery(done))
}

// accountPage finds an account by external or platform number and shows
// its timeline.
func (c *Console) accountPage(w http.ResponseWriter, r *http.Request) {
	code := r.PathValue("code")
	q := strings.TrimSpace(r.URL.Query().Get("number"))
	data := map[string]any{"Supplier": code, "Number": q, "Flash": r.URL.Query().Get("done"), "NoFilter": failureFilter{}}
	if q == "" || len(q) > 128 {
		data["Error"] = "Give an external or platform account number (at most 128 characters)."
		c.render(w, r, http.StatusBadRequest, "account", data)
		return
	}
	t, err := c.deps.Store.FindTimeline(r.Context(), code, q)
	if errors.Is(err, postgres.ErrProcessNotFound) {
		data["Error"] = "No account " + q + " for supplier " + code + "."
		c.render(w, r, http.StatusNotFound, "account", data)
		return
	}
	if err != nil {
		c.fail(w, r, err)
		return
	}
	data["Timeline"] = t
	c.render(w, r, http.StatusOK, "account", data)
}

// skipAccount is the console's `importctl account skip`. The account
// number comes in the form, not the path: any accepted identifier then
// reaches it (net/http's mux cannot route a segment that decodes to "/").
func (c *Console) skipAccount(w http.ResponseWriter, r *http.Request) {
	code, external := r.PathValue("code"), r.PostFormValue("external")
	if external == "" {
		http.Error(w, "external: give the account's external number", http.StatusBadRequest)
		return
	}
	err := c.deps.Store.MarkSkipped(r.Context(), code, external)
	if e, ok := dataimport.AsError(err); ok && e.Code == dataimport.CodeImportInProgress {
		http.Error(w, e.Detail, http.StatusConflict)
		return
	}
	if err != nil {
		c.notFoundOr(w, r, err)
		return
	}
	c.invalidateOverview()
	redirect(w, r, accountURL(code, external)+"&done="+urlQuery("marked skipped"))
}

func (c *Console) notFoundOr(w http.ResponseWriter, r *http.Request, err error) {
	if e, ok := dataimport.AsError(err); ok && (e.Code == dataimport.CodeSupplierNotFound || e.Code == dataimport.CodeNotFound) {
		http.Error(w, e.Detail, http.StatusNotFound)
		return
	}
	c.fail(w, r, err)
}

func (c *Console) auditPage(w http.ResponseWriter, r *http.Request) {
	rows, err := c.deps.Store.AuditLog(r.Context(), time.Time{}, 500)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "audit", map[string]any{"Rows": rows})
}
