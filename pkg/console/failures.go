package console

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/gridshift/dataimport/pkg/postgres"
)

// The supplier's Failures view (CONTRACT §13): the failure records the
// partner API lists, counted by (code, attr), filtered and paged, each with
// a drill-down to the payload it was about.

// failuresPageSize is the records a page lists; pages follow the record
// id (import_failures_supplier_idx), however many records there are.
const failuresPageSize = 50

func (c *Console) failuresPage(w http.ResponseWriter, r *http.Request) {
	code := r.PathValue("code")
	sup, err := c.deps.Store.SupplierByCode(r.Context(), code)
	if err != nil {
		c.notFoundOr(w, r, err)
		return
	}
	f, problem := parseFailureFilter(r.URL.Query())
	data := map[string]any{"Supplier": sup.Code, "Filter": f, "NoFilter": failureFilter{}, "Sources": postgres.FailureSources,
		"Flash": r.URL.Query().Get("done")}
	if problem != "" {
		data["Error"] = problem
		c.render(w, r, http.StatusBadRequest, "failures", data)
		return
	}
	summary, err := c.deps.Store.FailureSummary(r.Context(), postgres.FailureQuery{SupplierID: sup.ID, JobID: f.Job})
	if err != nil {
		c.fail(w, r, err)
		return
	}
	var rows []postgres.Failure
	// A code or attr the summary does not have matches no record: the list
	// would read every record of the supplier to find none.
	if summaryHas(summary, f.Code, f.Attr) {
		if err := c.deps.Store.EachFailure(r.Context(), f.query(sup.ID, failuresPageSize+1), func(x postgres.Failure) error {
			rows = append(rows, x)
			return nil
		}); err != nil {
			c.fail(w, r, err)
			return
		}
	}
	if len(rows) > failuresPageSize {
		rows = rows[:failuresPageSize]
		data["Next"] = f.Page(rows[len(rows)-1].Cursor())
	}
	data["Summary"], data["Rows"] = summary, rows
	c.render(w, r, http.StatusOK, "failures", data)
}

// summaryHas reports whether the summary counts a record with a field
// error of code and attr (either empty: any).
func summaryHas(summary []postgres.FailureCount, code, attr string) bool {
	for _, c := range summary {
		if (code == "" || c.Code == code) && (attr == "" || c.Attr == attr) && c.Unresolved+c.Resolved > 0 {
			return true
		}
	}
	return false
}

// failurePage is one record's drill-down: the record, and the payload it
// was about with each field error at its attr.
func (c *Console) failurePage(w http.ResponseWriter, r *http.Request) {
	code := r.PathValue("code")
	sup, err := c.deps.Store.SupplierByCode(r.Context(), code)
	if err != nil {
		c.notFoundOr(w, r, err)
		return
	}
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		http.Error(w, "No such failure record.", http.StatusNotFound)
		return
	}
	f, err := c.deps.Store.FailureByID(r.Context(), sup.ID, id)
	if errors.Is(err, postgres.ErrFailureNotFound) {
		http.Error(w, "No such failure record for supplier "+sup.Code+".", http.StatusNotFound)
		return
	}
	if err != nil {
		c.fail(w, r, err)
		return
	}
	p, err := c.deps.Store.PayloadOfFailure(r.Context(), sup.ID, f)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	data := map[string]any{"Supplier": sup.Code, "Failure": f, "Payload": p, "NoFilter": failureFilter{}}
	if p.Payload != nil {
		if lines, ok := annotatePayload(p.Payload, f.Errors); ok {
			data["Lines"] = lines
		} else {
			data["Raw"] = string(p.Payload)
		}
	}
	c.render(w, r, http.StatusOK, "failure", data)
}
