package app_test

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/postgres"
)

// Failure records (CONTRACT §13) end to end: bad job lines and refused
// stages recorded once per account and failure, summarised per field code,
// resolved by a later stage, invisible to another organisation.

const failuresURL = "/v1/data-import/failures/"

type failureView struct {
	ID                    string `json:"id"`
	ExternalAccountNumber string `json:"external_account_number"`
	Source                string `json:"source"`
	Job                   *int64 `json:"job"`
	Line                  *int64 `json:"line"`
	Code                  string `json:"code"`
	Errors                []struct {
		Attr, Code, Detail string
	} `json:"errors"`
	Occurrences int64   `json:"occurrences"`
	ResolvedAt  *string `json:"resolved_at"`
}

func (p *pipeline) failures(token, query string) ([]failureView, string) {
	p.TB.Helper()
	r := p.As(token, http.MethodGet, failuresURL+"?"+query, nil)
	if r.Status != http.StatusOK {
		p.TB.Fatalf("failures %s: %d %s", query, r.Status, r.Body)
	}
	var page struct {
		Failures []failureView `json:"failures"`
		Next     string        `json:"next"`
	}
	r.Decode(&page)
	return page.Failures, page.Next
}

type failureCount struct {
	Code, Attr           string
	Unresolved, Resolved int64
	Example              string `json:"example_external_account_number"`
}

func (p *pipeline) failureSummary(token, query string) []failureCount {
	p.TB.Helper()
	r := p.As(token, http.MethodGet, failuresURL+"summary/?"+query, nil)
	if r.Status != http.StatusOK {
		p.TB.Fatalf("failure summary %s: %d %s", query, r.Status, r.Body)
	}
	var body struct {
		ByCode []failureCount `json:"by_code"`
	}
	r.Decode(&body)
	return body.ByCode
}

// badAccounts are ways to break the sample account, each a different field
// code: an MPAN whose check digit is wrong, a product the catalogue lacks,
// a phone number, a date that does not exist, a balance out of range.
var badAccounts = []struct{ name, from, to string }{
	{"mpan", `"mpxn":"1200023305967"`, `"mpxn":"1200023305960"`},
	{"product", `"product_code":"DEMO-VAR-24-02"`, `"product_code":"NO-SUCH-PRODUCT"`},
	{"phone", `"mobile":"07400 123456"`, `"mobile":"12"`},
	{"date", `"date_of_birth":"1980-04-12"`, `"date_of_birth":"1980-02-30"`},
	{"balance", `"transfer_balance":"-42.50"`, `"transfer_balance":"999999999999999.00"`},
}

func TestFailuresJobLinesSummaryAndCSV(t *testing.T) {
	p := newPipeline(t)
	// The GB market's MPAN rule and the product catalogue apply to this supplier.
	p.loadDemoCatalogue()
	on, gb := true, "GB"
	if _, err := p.DB.UpdateSupplierSettings(t.Context(), "DEMO_ENERGY", postgres.SupplierSettings{RequireProducts: &on, Market: &gb}); err != nil {
		t.Fatal(err)
	}
	// Five kinds of bad line, kind k on 2+k accounts, between good lines.
	var body strings.Builder
	for k, b := range badAccounts {
		for i := range 2 + k {
			line := p.jobAccountLine(fmt.Sprintf("BAD-%s-%d", b.name, i))
			if !strings.Contains(line, b.from) {
				t.Fatalf("sample account lacks %s", b.from)
			}
			body.WriteString(strings.Replace(line, b.from, b.to, 1) + "\n")
			body.WriteString(p.jobAccountLine(fmt.Sprintf("GOOD-%s-%d", b.name, i)) + "\n")
		}
	}
	id := acceptedJob(t, p.postJob(p.token, "import_supplier=DEMO_ENERGY&create=false", strings.NewReader(body.String()), false))

	// The expected counts, from the job's own results: each bad line is one
	// account, counted once under each (code, attr) of its field errors.
	want := map[[2]string]int64{}
	codes := map[string]bool{}
	failed := p.jobResults(p.token, id, "failed")
	if len(failed) != 20 {
		t.Fatalf("%d failed lines, want 20", len(failed))
	}
	firstCode := map[int]string{}
	for _, l := range failed {
		seen := map[[2]string]bool{}
		for _, e := range l.Errors {
			k := [2]string{e.Code, e.Attr}
			if !seen[k] {
				seen[k] = true
				want[k]++
			}
			codes[e.Code] = true
		}
		firstCode[l.Line] = l.Errors[0].Code
	}
	if len(codes) < 5 {
		t.Fatalf("the bad lines have %d field codes, want at least 5: %v", len(codes), codes)
	}
	got := map[[2]string]int64{}
	for _, c := range p.failureSummary(p.token, fmt.Sprintf("import_supplier=DEMO_ENERGY&job=%d", id)) {
		got[[2]string{c.Code, c.Attr}] = c.Unresolved
		if c.Resolved != 0 || !strings.HasPrefix(c.Example, "BAD-") {
			t.Errorf("summary row %+v", c)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("summary counts\n got %v\nwant %v", got, want)
	}
	// The list names every bad account once, with its field errors.
	list, next := p.failures(p.token, fmt.Sprintf("import_supplier=DEMO_ENERGY&job=%d&source=job_line&limit=1000", id))
	if len(list) != 20 || next != "" {
		t.Fatalf("%d records (next %q), want 20", len(list), next)
	}
	for _, f := range list {
		if f.Occurrences != 1 || len(f.Errors) == 0 || f.ResolvedAt != nil || f.Job == nil || *f.Job != id {
			t.Errorf("record %+v", f)
		}
	}
	// A filter by field code, and pages of 3 that add up.
	mpan := failed[0].Errors[0]
	byCode, _ := p.failures(p.token, "import_supplier=DEMO_ENERGY&code="+mpan.Code+"&attr="+mpan.Attr)
	if int64(len(byCode)) != want[[2]string{mpan.Code, mpan.Attr}] {
		t.Errorf("code filter: %d records, want %d", len(byCode), want[[2]string{mpan.Code, mpan.Attr}])
	}
	seen, after := 0, ""
	for range 10 {
		page, next := p.failures(p.token, "import_supplier=DEMO_ENERGY&limit=3&after="+after)
		seen += len(page)
		if next == "" {
			break
		}
		after = next
	}
	if seen != 20 {
		t.Errorf("pages of 3 held %d records, want 20", seen)
	}

	// The results CSV: error_code is the first field error's code, not the envelope's.
	rows := p.csvResults(p.token, id, "failed")
	for _, row := range rows[1:] {
		var line int
		fmt.Sscan(row[0], &line)
		if row[4] != firstCode[line] || row[4] == "account_failed_validation" || row[5] == "" || row[8] != "account_failed_validation" {
			t.Errorf("CSV row %q: error_code want %s", row, firstCode[line])
		}
	}
	// The failures CSV too.
	r := p.As(p.token, http.MethodGet, failuresURL+"?import_supplier=DEMO_ENERGY&format=csv", nil)
	recs, err := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(r.Body, []byte("\ufeff")))).ReadAll()
	if err != nil || len(recs) != 21 || recs[0][5] != "error_code" || recs[1][5] == "account_failed_validation" {
		t.Errorf("failures CSV: %v %d rows %q", err, len(recs), recs[:min(2, len(recs))])
	}
}

func TestFailuresOneRecordPerAccountAndResolution(t *testing.T) {
	p := newPipeline(t)
	bad := func(ext string) string {
		return strings.Replace(p.account(ext), `"sales_channel": "PRICE_COMPARISON"`, `"sales_channel": "CARRIER_PIGEON"`, 1)
	}
	// A stage refusal of an account never staged is listed with its errors.
	for range 3 {
		if r := p.As(p.token, http.MethodPost, stagePath, bad("NEVER-1")); r.Status != http.StatusBadRequest {
			t.Fatalf("bad stage: %d %s", r.Status, r.Body)
		}
	}
	// The dry check is not recorded.
	if r := p.As(p.token, http.MethodPost, validatePath, bad("DRY-1")); r.Status != http.StatusBadRequest {
		t.Fatalf("validate: %d %s", r.Status, r.Body)
	}
	list, _ := p.failures(p.token, "import_supplier=DEMO_ENERGY&source=stage")
	if len(list) != 1 || list[0].ExternalAccountNumber != "NEVER-1" || list[0].Occurrences != 3 || list[0].ResolvedAt != nil ||
		len(list[0].Errors) != 1 || list[0].Errors[0].Code != "invalid_choice" || list[0].Errors[0].Attr != "sales_channel" {
		t.Fatalf("stage refusals: %+v", list)
	}
	// A later successful stage resolves it.
	p.stage("NEVER-1")
	if list, _ := p.failures(p.token, "import_supplier=DEMO_ENERGY&resolved=true"); len(list) != 1 || list[0].ResolvedAt == nil {
		t.Fatalf("after a good stage: %+v", list)
	}
	if list, _ := p.failures(p.token, "import_supplier=DEMO_ENERGY&resolved=false"); len(list) != 0 {
		t.Fatalf("unresolved after a good stage: %+v", list)
	}

	// The same bad account 1,000 times in a job: one record, 1,000 occurrences.
	line := strings.Replace(p.jobAccountLine("REPEAT-1"), `"sales_channel":"PRICE_COMPARISON"`, `"sales_channel":"CARRIER_PIGEON"`, 1)
	start := time.Now()
	var body strings.Builder
	for i := range 1000 { // good lines between: a job mostly invalid stops receiving
		body.WriteString(p.jobAccountLine(fmt.Sprintf("OK-%d", i)) + "\n" + line + "\n")
	}
	id := acceptedJob(t, p.postJob(p.token, "import_supplier=DEMO_ENERGY&create=false", strings.NewReader(body.String()), false))
	t.Logf("2,000 lines (1,000 bad) received in %s", time.Since(start))
	list, _ = p.failures(p.token, fmt.Sprintf("import_supplier=DEMO_ENERGY&job=%d", id))
	if len(list) != 1 || list[0].Occurrences != 1000 || list[0].ExternalAccountNumber != "REPEAT-1" {
		t.Fatalf("1,000 repeats: %+v", list)
	}
	if n := p.count(`SELECT count(*) FROM import_failures`); n != 2 {
		t.Fatalf("%d failure records, want 2", n)
	}

	// Another organisation sees none of them: the supplier is not granted
	// (404, as the events feed), and its own supplier has no failures.
	p.Supplier("OTHER_ENERGY")
	other := p.Tenant("Other Partner", "OTHER_ENERGY")
	for _, path := range []string{failuresURL + "?import_supplier=DEMO_ENERGY", failuresURL + "summary/?import_supplier=DEMO_ENERGY"} {
		if r := p.As(other.Token, http.MethodGet, path, nil); r.Status != http.StatusNotFound || r.JSON()["code"] != "not_found" {
			t.Errorf("%s as another organisation: %d %s", path, r.Status, r.Body)
		}
	}
	if list, _ := p.failures(other.Token, "import_supplier=OTHER_ENERGY"); len(list) != 0 {
		t.Errorf("another organisation's supplier lists %+v", list)
	}
	if c := p.failureSummary(other.Token, "import_supplier=OTHER_ENERGY"); len(c) != 0 {
		t.Errorf("another organisation's summary %+v", c)
	}
	// Bad parameters are one 400 naming each.
	r := p.As(p.token, http.MethodGet, failuresURL+"?import_supplier=DEMO_ENERGY&limit=0&resolved=maybe&source=x&since=yesterday&bogus=1", nil)
	if r.Status != http.StatusBadRequest || len(r.JSON()["errors"].([]any)) != 5 {
		t.Errorf("bad parameters: %d %s", r.Status, r.Body)
	}
}
