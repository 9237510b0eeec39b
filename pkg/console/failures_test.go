package console_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	summaryRowRe = regexp.MustCompile(`(?s)<tr data-code="([^"]*)" data-attr="([^"]*)"[^>]*>.*?<td class="unresolved">(\d+)</td><td class="resolved">(\d+)</td>`)
	failureRowRe = regexp.MustCompile(`(?s)<tr data-id="(\d+)" data-external="([^"]*)">(.*?)</tr>`)
	rowCodeRe    = regexp.MustCompile(`<code class="code">([^<]*)</code>`)
	nextRe       = regexp.MustCompile(`<a href="([^"]+)" id="page-next">`)
	errorLineRe  = regexp.MustCompile(`<span class="jl has-error" data-path="([^"]*)">([^<]*)<span class="annot" data-code="([^"]*)"`)
)

type failureRow struct {
	id, external string
	codes        []string
}

func failureRows(t *testing.T, body string) []failureRow {
	t.Helper()
	var out []failureRow
	for _, m := range failureRowRe.FindAllStringSubmatch(body, -1) {
		r := failureRow{id: m[1], external: html.UnescapeString(m[2])}
		for _, c := range rowCodeRe.FindAllStringSubmatch(m[3], -1) {
			r.codes = append(r.codes, c[1])
		}
		out = append(out, r)
	}
	return out
}

// TestFailuresView: a job's invalid lines across the five kinds of bad
// data and a refused stage are counted per (code, attr) exactly, listed,
// filtered and paged; a line's drill-down shows the line as sent with its
// error at its attr, a refused stage says it kept no payload, and another
// supplier's record is not reachable through this supplier's page.
func TestFailuresView(t *testing.T) {
	st, srv := consoleStack(t)
	catalogueSupplier(t, st, "DEMO_ENERGY")
	st.Supplier("OTHER")
	ten := st.Tenant("Partner", "DEMO_ENERGY", "OTHER")
	b := loggedIn(t, st, srv.URL, "fiona")

	body, want, _ := failingJob(t, "DEMO_ENERGY", 600, 10) // 60 bad lines, 12 of each kind
	job := st.As(ten.Token, http.MethodPost, "/v1/data-import/jobs/?import_supplier=DEMO_ENERGY&create=false", body,
		"Content-Type", "application/x-ndjson")
	if job.Status != http.StatusAccepted {
		t.Fatalf("upload: %d %s", job.Status, job.Body)
	}
	jobID := int64(job.JSON()["id"].(float64))
	refused := accountBody(t, "DEMO_ENERGY", "STAGE/1?")
	refused["date_of_sale"] = "2024-02-30"
	if r := st.As(ten.Token, http.MethodPost, "/v1/data-import/account-import-process/create-or-update/", refused); r.Status != http.StatusBadRequest {
		t.Fatalf("refused stage: %d %s", r.Status, r.Body)
	}
	want[[2]string{"invalid_date", "date_of_sale"}]++
	other := accountBody(t, "OTHER", "OTHER-1")
	other["date_of_sale"] = "2024-02-31"
	if r := st.As(ten.Token, http.MethodPost, "/v1/data-import/account-import-process/create-or-update/", other); r.Status != http.StatusBadRequest {
		t.Fatalf("refused stage (OTHER): %d %s", r.Status, r.Body)
	}

	base := "/suppliers/DEMO_ENERGY/failures"
	p := b.do(http.MethodGet, base, nil)
	if p.Status != http.StatusOK {
		t.Fatalf("failures page: %d %.500s", p.Status, p.Body)
	}
	got := map[[2]string]int64{}
	for _, m := range summaryRowRe.FindAllStringSubmatch(p.Body, -1) {
		n, _ := strconv.ParseInt(m[3], 10, 64)
		got[[2]string{m[1], m[2]}] = n
		if m[4] != "0" {
			t.Errorf("%s %s: %s resolved, want 0", m[1], m[2], m[4])
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("summary counts:\n got %v\nwant %v", got, want)
	}

	// Paging: 61 records, 50 a page, each once.
	rows := failureRows(t, p.Body)
	next := nextRe.FindStringSubmatch(p.Body)
	if len(rows) != 50 || next == nil {
		t.Fatalf("first page: %d rows, next %v", len(rows), next)
	}
	p2 := b.do(http.MethodGet, html.UnescapeString(next[1]), nil)
	rows2 := failureRows(t, p2.Body)
	if len(rows2) != 11 || nextRe.MatchString(p2.Body) {
		t.Fatalf("second page (%s): %d rows, next link %v", next[1], len(rows2), nextRe.MatchString(p2.Body))
	}
	seen := map[string]bool{}
	for _, r := range append(rows, rows2...) {
		if seen[r.id] {
			t.Errorf("record %s on two pages", r.id)
		}
		seen[r.id] = true
	}

	// Filters: by cause (the summary's links), by job, by source.
	for _, k := range badKinds {
		u := base + "?" + url.Values{"code": {k.code}, "attr": {k.attr}, "job": {fmt.Sprint(jobID)}}.Encode()
		p := b.do(http.MethodGet, u, nil)
		rows := failureRows(t, p.Body)
		if p.Status != http.StatusOK || len(rows) != 12 {
			t.Errorf("%s: %d, %d rows, want 12", u, p.Status, len(rows))
		}
		for _, r := range rows {
			if len(r.codes) != 1 || r.codes[0] != k.code || !strings.HasPrefix(r.external, "JOB-") {
				t.Errorf("%s lists %+v", u, r)
			}
		}
		if !strings.Contains(p.Body, html.EscapeString(base+"?"+url.Values{"attr": {k.attr}, "code": {k.code}, "job": {fmt.Sprint(jobID)}}.Encode())) {
			t.Errorf("the summary does not link to the filter of %s %s", k.code, k.attr)
		}
	}
	stage := b.do(http.MethodGet, base+"?source=stage&resolved=false", nil)
	if rows := failureRows(t, stage.Body); len(rows) != 1 || rows[0].external != "STAGE/1?" || rows[0].codes[0] != "invalid_date" {
		t.Fatalf("source=stage: %+v", rows)
	}
	for _, none := range []string{"resolved=true", "code=no_such_code", "code=invalid_mpan&attr=date_of_sale", "attr=nowhere"} {
		if p := b.do(http.MethodGet, base+"?"+none, nil); p.Status != http.StatusOK || len(failureRows(t, p.Body)) != 0 ||
			!strings.Contains(p.Body, "No failure records match.") {
			t.Errorf("?%s: %d, %d records", none, p.Status, len(failureRows(t, p.Body)))
		}
	}
	// An attr alone matches every code at it.
	if rows := failureRows(t, b.do(http.MethodGet, base+"?attr=date_of_sale", nil).Body); len(rows) != 13 {
		t.Errorf("attr=date_of_sale lists %d records, want 13 (12 lines and the refused stage)", len(rows))
	}
	for _, bad := range []string{"source=nope", "job=x", "resolved=maybe", "after=-1", "code=" + strings.Repeat("x", 300)} {
		if p := b.do(http.MethodGet, base+"?"+bad, nil); p.Status != http.StatusBadRequest || !strings.Contains(p.Body, `id="error"`) {
			t.Errorf("?%s: %d, want 400 with the problem", bad, p.Status)
		}
	}

	// The drill-down of a bad MPAN line: the line as sent, the error at the MPAN.
	mpan := failureRows(t, b.do(http.MethodGet, base+"?code=invalid_mpan", nil).Body)
	if len(mpan) == 0 {
		t.Fatal("no invalid_mpan records")
	}
	d := b.do(http.MethodGet, base+"/"+mpan[0].id, nil)
	lines := errorLineRe.FindAllStringSubmatch(d.Body, -1)
	if d.Status != http.StatusOK || len(lines) != 1 || lines[0][1] != "supply_addresses.0.meter_points.0.mpxn" ||
		lines[0][3] != "invalid_mpan" || !strings.Contains(html.UnescapeString(lines[0][2]), `"mpxn": "1200023305968"`) ||
		!strings.Contains(d.Body, fmt.Sprintf("job %d, line", jobID)) || !strings.Contains(d.Body, mpan[0].external) {
		t.Fatalf("drill-down: %d %v\n%.3000s", d.Status, lines, d.Body)
	}
	// A refused stage kept no payload, and says so.
	d = b.do(http.MethodGet, base+"/"+failureRows(t, stage.Body)[0].id, nil)
	if d.Status != http.StatusOK || !strings.Contains(d.Body, `id="payload-missing"`) || strings.Contains(d.Body, `id="payload"`) ||
		!strings.Contains(d.Body, html.EscapeString(accountURL("DEMO_ENERGY", "STAGE/1?"))) {
		t.Fatalf("drill-down of a refused stage: %d %.2000s", d.Status, d.Body)
	}
	// Another supplier's record, a record that does not exist, a bad id.
	var otherID int64
	if err := st.DB.Gorm().Raw(`SELECT f.id FROM import_failures f JOIN import_suppliers s ON s.id = f.supplier_id WHERE s.code = 'OTHER'`).Scan(&otherID).Error; err != nil || otherID == 0 {
		t.Fatalf("OTHER's record: %d %v", otherID, err)
	}
	for _, id := range []string{fmt.Sprint(otherID), "99999999", "x", "0"} {
		if p := b.do(http.MethodGet, base+"/"+id, nil); p.Status != http.StatusNotFound {
			t.Errorf("drill-down of %s: %d, want 404", id, p.Status)
		}
	}
	if p := b.do(http.MethodGet, "/suppliers/NOPE/failures", nil); p.Status != http.StatusNotFound {
		t.Errorf("failures of an unknown supplier: %d", p.Status)
	}
}

// accountURL mirrors the console's account URL (urls.go).
func accountURL(code, number string) string {
	return "/suppliers/" + url.PathEscape(code) + "/accounts?number=" + url.QueryEscape(number)
}

// TestRetryFailuresForm: the Failures view's retry posts its filter to
// RetryFailedCreations under the operator's name (audited with the
// filter and the count), reports the count, and refuses a filter of
// refused data (only creations are re-run). What a retry re-runs is
// tested with the store (pkg/postgres, pkg/app).
func TestRetryFailuresForm(t *testing.T) {
	st, srv := consoleStack(t)
	st.Supplier("ACME")
	b := loggedIn(t, st, srv.URL, "rita")
	page := "/suppliers/ACME/failures?code=invalid_mpan&job=7"
	p := b.do(http.MethodGet, page, nil)
	if !strings.Contains(p.Body, `id="retry-failures"`) || !strings.Contains(p.Body, `name="code" value="invalid_mpan"`) ||
		!strings.Contains(p.Body, `name="job" value="7"`) {
		t.Fatalf("no retry form with the filter: %.3000s", p.Body)
	}
	if p := b.do(http.MethodGet, "/suppliers/ACME/failures?source=stage", nil); strings.Contains(p.Body, `id="retry-failures"`) {
		t.Error("a filter of refused stages offers a retry")
	}
	r := b.post(page, "/suppliers/ACME/failures/retry", url.Values{"code": {"invalid_mpan"}, "attr": {""}, "job": {"7"}, "source": {""}})
	if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.Location, "/suppliers/ACME/failures?") {
		t.Fatalf("retry: %d → %q %s", r.Status, r.Location, r.Body)
	}
	if p := b.do(http.MethodGet, r.Location, nil); !strings.Contains(p.Body, "Done: 0 failed creations re-run") ||
		!strings.Contains(p.Body, `name="code" value="invalid_mpan"`) {
		t.Fatalf("after the retry (%s): %.2000s", r.Location, p.Body)
	}
	var audit []struct{ Actor, Target, After string }
	if err := st.DB.Gorm().Raw(`SELECT actor, target, after::text AS after FROM audit_log WHERE action = 'failures.retry'`).Scan(&audit).Error; err != nil {
		t.Fatal(err)
	}
	if len(audit) != 1 || audit[0].Actor != "operator:rita" || audit[0].Target != "supplier:ACME" ||
		!strings.Contains(audit[0].After, `"code": "invalid_mpan"`) || !strings.Contains(audit[0].After, `"job": 7`) ||
		!strings.Contains(audit[0].After, `"retried": 0`) {
		t.Fatalf("audit: %+v", audit)
	}
	for _, bad := range []url.Values{{"source": {"stage"}}, {"job": {"x"}}} {
		if r := b.post(page, "/suppliers/ACME/failures/retry", bad); r.Status != http.StatusBadRequest {
			t.Errorf("retry with %v: %d, want 400", bad, r.Status)
		}
	}
	if r := b.post(page, "/suppliers/NOPE/failures/retry", url.Values{}); r.Status != http.StatusNotFound {
		t.Errorf("retry for an unknown supplier: %d", r.Status)
	}
}
