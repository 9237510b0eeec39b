package console

import (
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gridshift/dataimport/pkg/postgres"
)

// failureFilter is the Failures view's filter and page, as its query
// string carries them: the partner list's filters (GET
// /v1/data-import/failures/), and after, the last record of the page
// before.
type failureFilter struct {
	Code, Attr, Source, Resolved string
	Job, After                   int64
}

// failureFilterMax bounds a code or attr in the query (the longest attr of
// an account is well under it).
const failureFilterMax = 256

// parseFailureFilter reads the filter; problem says what is wrong with it.
func parseFailureFilter(q url.Values) (f failureFilter, problem string) {
	f.Code, f.Attr = strings.TrimSpace(q.Get("code")), strings.TrimSpace(q.Get("attr"))
	f.Source, f.Resolved = q.Get("source"), q.Get("resolved")
	if len(f.Code) > failureFilterMax || len(f.Attr) > failureFilterMax {
		return f, "code and attr: at most 256 characters each."
	}
	if f.Source != "" && !slices.Contains(postgres.FailureSources, f.Source) {
		return f, "source: one of " + strings.Join(postgres.FailureSources, ", ") + "."
	}
	if f.Resolved != "" && f.Resolved != "true" && f.Resolved != "false" {
		return f, "resolved: true or false."
	}
	for name, dst := range map[string]*int64{"job": &f.Job, "after": &f.After} {
		if s := strings.TrimSpace(q.Get(name)); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return f, name + ": a job or record number."
			}
			*dst = n
		}
	}
	return f, ""
}

// values is the filter as a query string (empty fields left out).
func (f failureFilter) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"code": f.Code, "attr": f.Attr, "source": f.Source, "resolved": f.Resolved} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if f.Job != 0 {
		v.Set("job", strconv.FormatInt(f.Job, 10))
	}
	if f.After != 0 {
		v.Set("after", strconv.FormatInt(f.After, 10))
	}
	return v
}

// query is the store's query of the filter for a supplier.
func (f failureFilter) query(supplierID int64, limit int) postgres.FailureQuery {
	q := postgres.FailureQuery{SupplierID: supplierID, Code: f.Code, Attr: f.Attr, JobID: f.Job, Source: f.Source,
		After: f.After, Limit: limit}
	if f.Resolved != "" {
		b := f.Resolved == "true"
		q.Resolved = &b
	}
	return q
}

// ByCause is the filter narrowed to one (code, attr) of the summary, from
// its first page.
func (f failureFilter) ByCause(code, attr string) failureFilter {
	f.Code, f.Attr, f.After = code, attr, 0
	return f
}

// Page is the filter from after the record with cursor after (0: the first page).
func (f failureFilter) Page(after int64) failureFilter {
	f.After = after
	return f
}

// Filtered reports whether any filter is set (the page aside).
func (f failureFilter) Filtered() bool { f.After = 0; return f != failureFilter{} }

// ForJob is the filter narrowed to one job, from its first page.
func (f failureFilter) ForJob(job *int64) failureFilter {
	f.Job, f.After = *job, 0
	return f
}
