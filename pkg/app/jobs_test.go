package app_test

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// Bulk import jobs (CONTRACT §11), end to end against real Postgres and
// Redis: uploads through the API, a real worker, counters and results read
// back through the API.

const jobsURL = "/v1/data-import/jobs/"

// jobAccountLine is the sample account as one NDJSON line for external.
func (p *pipeline) jobAccountLine(external string) string {
	p.TB.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(p.account(external))); err != nil {
		p.TB.Fatal(err)
	}
	return buf.String()
}

// invalidJobLine is an account line that fails validation at sales_channel.
func (p *pipeline) invalidJobLine(external string) string {
	return strings.Replace(p.jobAccountLine(external), `"sales_channel":"PRICE_COMPARISON"`, `"sales_channel":"CARRIER_PIGEON"`, 1)
}

type jobView struct {
	ID                int64            `json:"id"`
	State             string           `json:"state"`
	Counters          map[string]int64 `json:"counters"`
	AccountsPerSecond float64          `json:"accounts_per_second"`
	ETASeconds        *int64           `json:"eta_seconds"`
	StatusURL         string           `json:"status_url"`
	Control           []map[string]any `json:"control"`
	Reconciliation    string           `json:"reconciliation"`
}

// postJob uploads body (gzipped when gz) with the given query and headers.
func (p *pipeline) postJob(token, query string, body io.Reader, gz bool, headers ...string) testutil.Response {
	p.TB.Helper()
	return p.postNDJSON(token, jobsURL+"?"+query, body, gz, headers...)
}

// postNDJSON posts an NDJSON body (gzipped when gz) to path.
func (p *pipeline) postNDJSON(token, path string, body io.Reader, gz bool, headers ...string) testutil.Response {
	p.TB.Helper()
	if gz {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		if _, err := io.Copy(zw, body); err != nil {
			p.TB.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			p.TB.Fatal(err)
		}
		body = &buf
		headers = append(headers, "Content-Encoding", "gzip")
	}
	return p.As(token, http.MethodPost, path, body, append([]string{"Content-Type", "application/x-ndjson"}, headers...)...)
}

func (p *pipeline) job(token string, id int64) jobView {
	p.TB.Helper()
	r := p.As(token, http.MethodGet, jobsURL+strconv.FormatInt(id, 10)+"/", nil)
	if r.Status != http.StatusOK {
		p.TB.Fatalf("job %d: %d %s", id, r.Status, r.Body)
	}
	var v jobView
	r.Decode(&v)
	return v
}

// waitJob polls the job until it is finished.
func (p *pipeline) waitJob(token string, id int64, within time.Duration) jobView {
	p.TB.Helper()
	deadline := time.Now().Add(within)
	for {
		v := p.job(token, id)
		if v.State == "COMPLETED" || v.State == "FAILED" || v.State == "CANCELLED" {
			return v
		}
		if time.Now().After(deadline) {
			p.TB.Fatalf("job %d still %s after %s: %v", id, v.State, within, v.Counters)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func acceptedJob(t testing.TB, r testutil.Response) int64 {
	t.Helper()
	if r.Status != http.StatusAccepted {
		t.Fatalf("upload: %d %s", r.Status, r.Body)
	}
	var out struct {
		ID        int64  `json:"id"`
		StatusURL string `json:"status_url"`
	}
	r.Decode(&out)
	if out.ID == 0 || out.StatusURL != jobsURL+strconv.FormatInt(out.ID, 10)+"/" {
		t.Fatalf("202 body: %s", r.Body)
	}
	return out.ID
}

// checkCounters compares the job's counters with want (absent: 0) and
// checks they add up to received.
func checkCounters(t testing.TB, v jobView, want map[string]int64) {
	t.Helper()
	sum := int64(0)
	for k, n := range v.Counters {
		if k != "received" {
			sum += n
		}
		if want[k] != n {
			t.Errorf("counter %s = %d, want %d (all: %v)", k, n, want[k], v.Counters)
		}
	}
	if sum != v.Counters["received"] {
		t.Errorf("counters add up to %d, received %d: %v", sum, v.Counters["received"], v.Counters)
	}
}

type resultLine struct {
	Line                  int    `json:"line"`
	ExternalAccountNumber string `json:"external_account_number"`
	Outcome               string `json:"outcome"`
	PlatformAccountNumber string `json:"platform_account_number"`
	Code                  string `json:"code"`
	Errors                []struct {
		Attr, Code, Detail string
	} `json:"errors"`
}

func (p *pipeline) jobResults(token string, id int64, outcome string) []resultLine {
	p.TB.Helper()
	r := p.As(token, http.MethodGet, fmt.Sprintf("%s%d/results/?outcome=%s&format=ndjson", jobsURL, id, outcome), nil)
	if r.Status != http.StatusOK {
		p.TB.Fatalf("results: %d %s", r.Status, r.Body)
	}
	var out []resultLine
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	for dec.More() {
		var l resultLine
		if err := dec.Decode(&l); err != nil {
			p.TB.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// TestJobCountersAddUp: a 5,000-line job with 50 invalid lines, 20 repeats
// of earlier lines and 30 accounts already imported. The counters add up
// exactly, the results name every invalid line with its errors, and every
// valid account is created once (a repeated one from its last line, with
// both versions staged).
func TestJobCountersAddUp(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker()
	for i := range 30 {
		p.ImportAccount(p.token, "DEMO_ENERGY", fmt.Sprintf("IMP-%d", i), "Migrations")
	}
	var body strings.Builder
	invalid := map[int]bool{}
	dupOf := map[int]int{} // repeating line → the line it repeats (1-based)
	for i := range 5000 {
		line := i + 1
		switch {
		case i < 30:
			body.WriteString(p.jobAccountLine(fmt.Sprintf("IMP-%d", i)))
		case i%100 == 50:
			invalid[line] = true
			body.WriteString(p.invalidJobLine(fmt.Sprintf("BAD-%d", i)))
		case i%250 == 220:
			dupOf[line] = line - 100
			body.WriteString(p.jobAccountLine(fmt.Sprintf("EXT-%d", i-100)))
		default:
			body.WriteString(p.jobAccountLine(fmt.Sprintf("EXT-%d", i)))
		}
		body.WriteString("\n")
	}
	if len(invalid) != 50 || len(dupOf) != 20 {
		t.Fatalf("fixture: %d invalid, %d repeats", len(invalid), len(dupOf))
	}
	id := acceptedJob(t, p.postJob(p.token, "import_supplier=DEMO_ENERGY&operations_team_name=Migrations", strings.NewReader(body.String()), true))
	v := p.waitJob(p.token, id, 3*time.Minute)
	if v.State != "COMPLETED" {
		t.Fatalf("job %s: %v", v.State, v.Counters)
	}
	checkCounters(t, v, map[string]int64{"received": 5000, "invalid": 50, "duplicate_line": 20, "already_imported": 30, "created": 4900})

	failed := p.jobResults(p.token, id, "failed")
	if len(failed) != 50 {
		t.Fatalf("%d failed results, want 50", len(failed))
	}
	for _, l := range failed {
		if !invalid[l.Line] || l.Outcome != "invalid" || l.ExternalAccountNumber != fmt.Sprintf("BAD-%d", l.Line-1) ||
			len(l.Errors) != 1 || l.Errors[0].Attr != "sales_channel" || l.Errors[0].Code != "invalid_choice" {
			t.Fatalf("failed result %+v", l)
		}
	}
	// The same as CSV for a spreadsheet: a header, then one row per line.
	rows := p.csvResults(p.token, id, "failed")
	// error_code and error_attr are the first field error's, not the envelope's.
	if len(rows) != 51 || strings.Join(rows[0], ",") != "line,external_account_number,outcome,platform_account_number,error_code,error_attr,error_detail,errors,envelope_code,history" ||
		rows[1][0] != "51" || rows[1][2] != "invalid" || rows[1][4] != "invalid_choice" || rows[1][5] != "sales_channel" ||
		!strings.HasPrefix(rows[1][7], "sales_channel: invalid_choice: ") || rows[1][8] != "account_failed_validation" {
		t.Fatalf("CSV results: %d rows, first %q", len(rows), rows[:min(2, len(rows))])
	}
	all := p.jobResults(p.token, id, "all")
	if len(all) != 5000 {
		t.Fatalf("%d results, want 5000", len(all))
	}
	for _, l := range all {
		switch {
		case l.Line <= 30 && (l.Outcome != "already_imported" || !platformNumberRe.MatchString(l.PlatformAccountNumber)):
			t.Fatalf("already imported line: %+v", l)
		case l.Outcome == "created" && !platformNumberRe.MatchString(l.PlatformAccountNumber):
			t.Fatalf("created line without a number: %+v", l)
		case l.Outcome == "duplicate_line" && dupOf[l.Line+100] != l.Line:
			t.Fatalf("duplicate_line on line %d, which no later line repeats", l.Line)
		}
	}
	// Every valid account exactly once; a repeated one has both versions.
	checks := map[string]int64{
		`SELECT count(*) FROM accounts`:                                                    4930,
		`SELECT count(DISTINCT platform_account_number) FROM accounts`:                     4930,
		`SELECT count(*) FROM import_processes WHERE status = 'COMPLETED'`:                 4930,
		`SELECT count(*) FROM import_attempts WHERE outcome = 'COMPLETED'`:                 4930,
		`SELECT count(*) FROM import_process_versions`:                                     4930 + 20,
		`SELECT count(*) FROM import_processes WHERE staged_version = 2`:                   20,
		`SELECT count(*) FROM import_processes WHERE external_account_number LIKE 'BAD-%'`: 0,
		// Reported through the event log (the outbox of webhooks and the
		// feed) as the per-account path reports: one STAGED per staged
		// version, one PROCESSED per account.
		`SELECT count(*) FROM import_process_events WHERE event = 'EVENT_ACCOUNT_IMPORT_PROCESS_STAGED'`:    4930 + 20,
		`SELECT count(*) FROM import_process_events WHERE event = 'EVENT_ACCOUNT_IMPORT_PROCESS_PROCESSED'`: 4930,
	}
	for q, want := range checks {
		if got := p.count(q); got != want {
			t.Errorf("%s = %d, want %d", q, got, want)
		}
	}
	// Visible through v1 status like any account.
	if st := p.status("EXT-31"); st["status"] != "COMPLETED" {
		t.Errorf("v1 status of a job's account: %v", st)
	}
	testutil.Tally(testutil.RowsChecked, 5000)
}

// csvResults reads the CSV results.
func (p *pipeline) csvResults(token string, id int64, outcome string) [][]string {
	p.TB.Helper()
	r := p.As(token, http.MethodGet, fmt.Sprintf("%s%d/results/?outcome=%s&format=csv", jobsURL, id, outcome), nil)
	if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/csv") {
		p.TB.Fatalf("csv results: %d %v %s", r.Status, r.Header, r.Body)
	}
	body := bytes.TrimPrefix(r.Body, []byte("\ufeff"))
	recs, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
	if err != nil {
		p.TB.Fatal(err)
	}
	return recs
}

// TestJobDryRunAndLimits: a dry-run job creates nothing and says, per line,
// that the account would import; a stage-only job stages; an upload over
// MAX_JOB_BYTES (as sent, or once decompressed) is a 413, the job FAILED
// with nothing kept; a line over MAX_BODY_BYTES is an invalid line.
func TestJobDryRunAndLimits(t *testing.T) {
	p := newPipeline(t, func(c *testutilConfig) { c.MaxJobBytes = 64 << 10; c.MaxBodyBytes = 8 << 10 })
	p.StartWorker()
	body := p.jobBody(0, 3)
	id := acceptedJob(t, p.postJob(p.token, jobQuery+"&dry_run=true", strings.NewReader(body), true))
	v := p.waitJob(p.token, id, time.Minute)
	checkCounters(t, v, map[string]int64{"received": 3, "staged": 3})
	for _, l := range p.jobResults(p.token, id, "all") {
		if l.Outcome != "staged" || l.Code != "dry_run_rolled_back" {
			t.Errorf("dry-run line %+v", l)
		}
	}
	if n := p.count(`SELECT count(*) FROM accounts`); n != 0 {
		t.Fatalf("a dry-run job created %d accounts", n)
	}
	if st := p.status("EXT-0001"); st["status"] != "UNKNOWN" {
		t.Errorf("v1 status after a dry run: %v", st)
	}

	id = acceptedJob(t, p.postJob(p.token, "import_supplier=DEMO_ENERGY&create=false", strings.NewReader(p.jobBody(10, 2)+strings.Repeat("x", 9<<10)+"\n"), false))
	v = p.waitJob(p.token, id, time.Minute)
	checkCounters(t, v, map[string]int64{"received": 3, "staged": 2, "invalid": 1})
	if bad := p.jobResults(p.token, id, "failed"); len(bad) != 1 || bad[0].Line != 3 || bad[0].Code != "request_too_large" {
		t.Fatalf("long line: %+v", bad)
	}

	big := strings.Repeat(p.jobAccountLine("EXT-BIG")+"\n", 30) // ~100 KiB, ~5 KiB gzipped
	for _, gz := range []bool{false, true} {
		r := p.postJob(p.token, jobQuery, strings.NewReader(big), gz)
		if r.Status != http.StatusRequestEntityTooLarge || r.JSON()["code"] != "request_too_large" {
			t.Fatalf("oversized upload (gzip %v): %d %s", gz, r.Status, r.Body)
		}
	}
	// The plain one was refused by its Content-Length before any job; the
	// gzipped one once it expanded past the limit, its job FAILED.
	if n := p.count(`SELECT count(*) FROM import_jobs WHERE state = 'FAILED'`); n != 1 {
		t.Errorf("%d FAILED jobs after the oversized uploads, want 1", n)
	}
	if n := p.count(`SELECT count(*) FROM import_job_records r JOIN import_jobs j ON j.id = r.job_id WHERE j.state = 'FAILED'`); n != 0 {
		t.Errorf("%d lines kept of refused uploads", n)
	}
}

// TestJobScheduleWindow: with a v2-style window, lines are staged at once
// and accounts created only once it opens; lines not started by its end
// fail with schedule_window_expired. A window in the past is refused.
func TestJobScheduleWindow(t *testing.T) {
	p := newPipeline(t)
	ts := func(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339) }
	if r := p.postJob(p.token, jobQuery+"&schedule_window_start="+ts(-time.Hour), strings.NewReader(p.jobBody(0, 1)), false); r.Status != http.StatusBadRequest ||
		!strings.Contains(string(r.Body), "schedule_window_start_in_past") {
		t.Fatalf("window in the past: %d %s", r.Status, r.Body)
	}
	// No worker yet: the window ends before anything can start.
	expired := acceptedJob(t, p.postJob(p.token, jobQuery+"&schedule_window_end="+ts(2*time.Second), strings.NewReader(p.jobBody(100, 5)), false))
	time.Sleep(3 * time.Second)
	p.StartWorker()
	v := p.waitJob(p.token, expired, time.Minute)
	checkCounters(t, v, map[string]int64{"received": 5, "failed": 5})
	if f := p.jobResults(p.token, expired, "failed"); len(f) != 5 || f[0].Code != "schedule_window_expired" {
		t.Fatalf("expired lines: %+v", f)
	}
	// Each is a creation failure of the job, counted under its envelope code.
	if c := p.failureSummary(p.token, fmt.Sprintf("import_supplier=DEMO_ENERGY&job=%d", expired)); len(c) != 1 ||
		c[0].Code != "schedule_window_expired" || c[0].Attr != "" || c[0].Unresolved != 5 {
		t.Fatalf("expired lines' failure summary: %+v", c)
	}

	opens := time.Now().Add(4 * time.Second).Truncate(time.Second)
	id := acceptedJob(t, p.postJob(p.token, jobQuery+"&schedule_window_start="+opens.UTC().Format(time.RFC3339), strings.NewReader(p.jobBody(0, 20)), false))
	v = p.waitCounter(p.token, id, "staged", 20, 30*time.Second)
	if v.Counters["created"] != 0 || time.Now().After(opens) {
		t.Fatalf("before the window: %v (now after the start: %v)", v.Counters, time.Now().After(opens))
	}
	v = p.waitJob(p.token, id, time.Minute)
	checkCounters(t, v, map[string]int64{"received": 20, "created": 20})
	if early := p.count(`SELECT count(*) FROM import_attempts WHERE outcome = 'COMPLETED' AND finished_at < ?`, opens); early != 0 {
		t.Fatalf("%d accounts created before the window opened", early)
	}
}

// TestJobPaymentInstructions: job lines carry payment instructions as the
// per-account path does: validated with the configured vendors when
// received (an unknown vendor is an invalid line), verified at the vendor
// before the creation transaction (a reference the vendor does not know
// fails that line alone), stored with the vendor's details.
func TestJobPaymentInstructions(t *testing.T) {
	s := newPayStack(t)
	paypal := s.edited("EXT-P4", func(m map[string]any) {
		withPaymentData("x")(m)
		m["payment_instructions"].([]any)[0].(map[string]any)["vendor"] = "PAYPAL"
	})
	body := strings.Join([]string{s.edited("EXT-P1", withPaymentData("mandate_missing")), s.edited("EXT-P2", withPaymentData("mandate_1NvDebit")),
		s.jobAccountLine("EXT-P3"), paypal}, "\n") + "\n"
	s.proxy.FailNext(1, testutil.StripeMissing) // the first vendor call: EXT-P1's, line order
	id := acceptedJob(t, s.postJob(s.token, jobQuery, strings.NewReader(body), false))
	v := s.waitJob(s.token, id, time.Minute)
	checkCounters(t, v, map[string]int64{"received": 4, "created": 2, "failed": 1, "invalid": 1})
	failed := s.jobResults(s.token, id, "failed")
	if len(failed) != 2 || failed[0].ExternalAccountNumber != "EXT-P1" || failed[0].Code != dataimport.CodePaymentInstructionNotFound ||
		failed[1].ExternalAccountNumber != "EXT-P4" || failed[1].Errors[0].Attr != "payment_instructions.0.vendor" {
		t.Fatalf("failed lines: %+v", failed)
	}
	if got := s.rows("EXT-P2"); got["instructions"] != 1 || got["payment_schedules"] != 2 {
		t.Fatalf("EXT-P2 rows %v", got)
	}
	if n := s.count(`SELECT count(*) FROM accounts WHERE external_account_number = 'EXT-P1'`); n != 0 {
		t.Fatal("the refused account was created")
	}
	// Both are failure records naming the job and line: the vendor's
	// refusal (recorded by the attempt, named by the job's settling) and
	// the invalid line.
	fs, _ := s.failures(s.token, fmt.Sprintf("import_supplier=DEMO_ENERGY&job=%d", id))
	if len(fs) != 2 || fs[0].ExternalAccountNumber != "EXT-P4" || fs[0].Source != "job_line" ||
		fs[1].ExternalAccountNumber != "EXT-P1" || fs[1].Source != "create" || fs[1].Code != dataimport.CodePaymentInstructionNotFound || fs[1].Line == nil || *fs[1].Line != 1 {
		t.Fatalf("failure records of the job: %+v", fs)
	}
}
