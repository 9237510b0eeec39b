package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// Re-running a job's lines (CONTRACT §13), end to end: corrected accounts
// posted to /jobs/<id>/lines/ replace the outcomes of the job's invalid
// lines, the job returns to PROCESSING, the worker creates them, and each
// line keeps its earlier outcome as history.

type rerunAnswer struct {
	ID       int64            `json:"id"`
	State    string           `json:"state"`
	Counters map[string]int64 `json:"counters"`
	Rerun    struct {
		Received, Accepted, Invalid int64
		NotInJob                    int64 `json:"not_in_job"`
		NotRetryable                int64 `json:"not_retryable"`
		AlreadyImported             int64 `json:"already_imported"`
		DuplicateLine               int64 `json:"duplicate_line"`
		RefusedTruncated            bool  `json:"refused_truncated"`
		Refused                     []struct {
			Line                  int64   `json:"line"`
			ExternalAccountNumber string  `json:"external_account_number"`
			Outcome               string  `json:"outcome"`
			JobLine               *int64  `json:"job_line"`
			JobLineOutcome        *string `json:"job_line_outcome"`
			Errors                []struct{ Attr, Code string }
		} `json:"refused"`
	} `json:"rerun"`
}

func (p *pipeline) postJobLines(id int64, body string, gz bool, headers ...string) (rerunAnswer, []byte, http.Header, int) {
	p.TB.Helper()
	r := p.postNDJSON(p.token, fmt.Sprintf("%s%d/lines/", jobsURL, id), strings.NewReader(body), gz, headers...)
	var a rerunAnswer
	if r.Status == http.StatusAccepted {
		r.Decode(&a)
	}
	return a, r.Body, r.Header, r.Status
}

type historyResult struct {
	Line    int    `json:"line"`
	Ext     string `json:"external_account_number"`
	Outcome string `json:"outcome"`
	History []struct {
		Outcome string `json:"outcome"`
		Code    string `json:"code"`
		At      string `json:"at"`
		Errors  []struct{ Attr, Code string }
	} `json:"history"`
}

func (p *pipeline) historyResults(id int64) map[string]historyResult {
	p.TB.Helper()
	r := p.As(p.token, http.MethodGet, fmt.Sprintf("%s%d/results/", jobsURL, id), nil)
	if r.Status != http.StatusOK {
		p.TB.Fatalf("results: %d %s", r.Status, r.Body)
	}
	out := map[string]historyResult{}
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	for dec.More() {
		var l historyResult
		if err := dec.Decode(&l); err != nil {
			p.TB.Fatal(err)
		}
		out[l.Ext] = l
	}
	return out
}

// rerunBadAccounts break the sample account at four different fields.
var rerunBadAccounts = []struct{ name, from, to, code string }{
	{"channel", `"sales_channel":"PRICE_COMPARISON"`, `"sales_channel":"CARRIER_PIGEON"`, "invalid_choice"},
	{"phone", `"mobile":"07400 123456"`, `"mobile":"12"`, "invalid_phone_number"},
	{"date", `"date_of_birth":"1980-04-12"`, `"date_of_birth":"1980-02-30"`, "invalid_date"},
	{"balance", `"transfer_balance":"-42.50"`, `"transfer_balance":"999999999999999.00"`, ""},
}

func (p *pipeline) badLine(kind int, external string) string {
	p.TB.Helper()
	b := rerunBadAccounts[kind]
	line := p.jobAccountLine(external)
	if !strings.Contains(line, b.from) {
		p.TB.Fatalf("sample account lacks %s", b.from)
	}
	return strings.Replace(line, b.from, b.to, 1)
}

// TestJobRerunCorrectsInvalidLines: a job with bad lines of four field
// codes completes with them invalid; their corrected accounts, posted to
// the job's lines, are created once each, the job completes with invalid
// 0, each line's history shows both outcomes and the failure records are
// resolved. Lines not in the job, already created, still invalid or
// repeated are answered and change nothing; a replay with the
// Idempotency-Key answers the same bytes; a cancelled job refuses with 409.
func TestJobRerunCorrectsInvalidLines(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker()
	var body strings.Builder
	var bad []string
	for k := range rerunBadAccounts {
		for i := range 5 {
			ext := fmt.Sprintf("BAD-%s-%d", rerunBadAccounts[k].name, i)
			bad = append(bad, ext)
			body.WriteString(p.badLine(k, ext) + "\n")
			body.WriteString(p.jobAccountLine(fmt.Sprintf("GOOD-%d-%d", k, i)) + "\n")
		}
	}
	id := acceptedJob(t, p.postJob(p.token, "import_supplier=DEMO_ENERGY&operations_team_name=Migrations", strings.NewReader(body.String()), false))
	v := p.waitJob(p.token, id, time.Minute)
	checkCounters(t, v, map[string]int64{"received": 40, "invalid": 20, "created": 20})
	first := p.historyResults(id)
	for k, b := range rerunBadAccounts {
		l := first["BAD-"+b.name+"-0"]
		if l.Outcome != "invalid" || len(l.History) != 0 {
			t.Fatalf("kind %d before the re-run: %+v", k, l)
		}
	}
	if n := p.count(`SELECT count(*) FROM import_failures WHERE source = 'job_line' AND resolved_at IS NULL`); n != 20 {
		t.Fatalf("%d unresolved failure records of invalid lines, want 20", n)
	}

	// The corrections, with: a still-invalid version of a bad account
	// before its good one, an account not in the job, one the job created,
	// and one corrected twice (the later line counts).
	var fix strings.Builder
	fix.WriteString(p.badLine(1, "BAD-phone-0") + "\n")      // line 1: invalid
	fix.WriteString(p.jobAccountLine("NOT-IN-JOB") + "\n")   // line 2: not_in_job
	fix.WriteString(p.jobAccountLine("GOOD-0-0") + "\n")     // line 3: already_imported
	fix.WriteString(p.jobAccountLine("BAD-date-0") + "\n\n") // line 4: duplicate_line (a later line repeats it); line 5 is blank, not counted
	for _, ext := range bad {
		fix.WriteString(p.jobAccountLine(ext) + "\n")
	}
	a, raw, _, status := p.postJobLines(id, fix.String(), true, "Idempotency-Key", "rerun-1")
	if status != http.StatusAccepted {
		t.Fatalf("re-run: %d %s", status, raw)
	}
	r := a.Rerun
	if r.Received != 24 || r.Accepted != 20 || r.Invalid != 1 || r.NotInJob != 1 || r.AlreadyImported != 1 || r.DuplicateLine != 1 ||
		r.NotRetryable != 0 || r.RefusedTruncated || len(r.Refused) != 4 {
		t.Fatalf("re-run answer: %s", raw)
	}
	wantRefused := []struct {
		line     int64
		ext, out string
	}{{1, "BAD-phone-0", "invalid"}, {2, "NOT-IN-JOB", "not_in_job"}, {3, "GOOD-0-0", "already_imported"}, {4, "BAD-date-0", "duplicate_line"}}
	for i, w := range wantRefused {
		got := r.Refused[i]
		if got.Line != w.line || got.ExternalAccountNumber != w.ext || got.Outcome != w.out {
			t.Errorf("refused[%d] = %+v, want %+v", i, got, w)
		}
	}
	if e := r.Refused[0].Errors; len(e) != 1 || e[0].Code != "invalid_phone_number" {
		t.Errorf("the still-invalid line's errors: %+v", e)
	}
	if j := r.Refused[2]; j.JobLine == nil || j.JobLineOutcome == nil || *j.JobLineOutcome != "created" {
		t.Errorf("the created account's job line: %+v", j)
	}
	if a.State != "PROCESSING" || a.Counters["invalid"] != 0 || a.Counters["pending"]+a.Counters["staged"]+a.Counters["in_progress"]+a.Counters["created"] != 40 {
		t.Fatalf("the job as the re-run left it: %s %v", a.State, a.Counters)
	}

	// A retry with the key replays the answer byte for byte; the key with
	// another body is refused.
	_, replayed, h, status := p.postJobLines(id, fix.String(), true, "Idempotency-Key", "rerun-1")
	if status != http.StatusAccepted || h.Get("Idempotent-Replayed") != "true" || !bytes.Equal(replayed, raw) {
		t.Fatalf("replay: %d %q\n%s\nwant\n%s", status, h.Get("Idempotent-Replayed"), replayed, raw)
	}
	if _, other, _, status := p.postJobLines(id, p.jobAccountLine("BAD-phone-1")+"\n", false, "Idempotency-Key", "rerun-1"); status != http.StatusUnprocessableEntity ||
		!strings.Contains(string(other), `"idempotency_key_reused"`) {
		t.Fatalf("the key with another body: %d %s", status, other)
	}

	v = p.waitJob(p.token, id, time.Minute)
	checkCounters(t, v, map[string]int64{"received": 40, "created": 40})
	// Replayed as answered, whatever the job did since.
	if _, again, h, status := p.postJobLines(id, fix.String(), true, "Idempotency-Key", "rerun-1"); status != http.StatusAccepted ||
		h.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again, raw) {
		t.Fatalf("replay once the job completed: %d %s", status, again)
	}
	for q, want := range map[string]int64{
		`SELECT count(*) FROM accounts`: 40, `SELECT count(DISTINCT external_account_number) FROM accounts`: 40,
		`SELECT count(*) FROM accounts WHERE external_account_number LIKE 'BAD-%'`:                   20,
		`SELECT count(*) FROM import_attempts WHERE outcome = 'COMPLETED'`:                           40,
		`SELECT count(*) FROM accounts WHERE external_account_number = 'NOT-IN-JOB'`:                 0,
		`SELECT count(*) FROM import_failures WHERE resolved_at IS NULL`:                             0,
		`SELECT count(*) FROM import_failures WHERE source = 'job_line' AND resolved_at IS NOT NULL`: 20,
		`SELECT count(*) FROM import_job_corrections`:                                                0,
		// The job ended twice, each time with its event; the second with the corrected counters.
		fmt.Sprintf(`SELECT count(*) FROM import_process_events WHERE event = 'JOB_COMPLETED' AND (data->>'job_id')::bigint = %d`, id): 2,
		fmt.Sprintf(`SELECT count(*) FROM import_process_events WHERE event = 'JOB_COMPLETED' AND (data->>'job_id')::bigint = %d
			AND (data->'counters'->>'invalid')::int = 0 AND (data->'counters'->>'created')::int = 40`, id): 1,
	} {
		if got := p.count(q); got != want {
			t.Errorf("%s = %d, want %d", q, got, want)
		}
	}
	after := p.historyResults(id)
	for k, b := range rerunBadAccounts {
		for i := range 5 {
			ext := fmt.Sprintf("BAD-%s-%d", b.name, i)
			l := after[ext]
			if l.Outcome != "created" || len(l.History) != 1 || l.History[0].Outcome != "invalid" || l.History[0].At == "" ||
				l.History[0].Code != "account_failed_validation" || len(l.History[0].Errors) == 0 ||
				(b.code != "" && l.History[0].Errors[0].Code != b.code) {
				t.Fatalf("kind %d line after the re-run: %+v", k, l)
			}
		}
	}
	if l := after["GOOD-0-0"]; l.Outcome != "created" || len(l.History) != 0 {
		t.Errorf("an untouched line: %+v", l)
	}
	// The CSV carries the history in a column of its own.
	rows := p.csvResults(p.token, id, "all")
	if h := rows[0]; h[len(h)-1] != "history" {
		t.Fatalf("CSV header: %q", h)
	}
	for _, row := range rows[1:] {
		if strings.HasPrefix(row[1], "BAD-channel-") && !strings.Contains(row[len(row)-1], "invalid") {
			t.Fatalf("CSV history of %s: %q", row[1], row[len(row)-1])
		}
	}

	// Sent again, a created line is already imported and changes nothing.
	a, raw, _, status = p.postJobLines(id, p.jobAccountLine("BAD-phone-2")+"\n", false)
	if status != http.StatusAccepted || a.Rerun.AlreadyImported != 1 || a.Rerun.Accepted != 0 || a.State != "COMPLETED" {
		t.Fatalf("a created line sent again: %d %s", status, raw)
	}
	checkCounters(t, p.job(p.token, id), map[string]int64{"received": 40, "created": 40})

	// A stage-only job's staged line is neither invalid nor failed.
	staged := acceptedJob(t, p.postJob(p.token, "import_supplier=DEMO_ENERGY&create=false", strings.NewReader(p.jobAccountLine("STAGED-1")+"\n"), false))
	p.waitJob(p.token, staged, time.Minute)
	a, raw, _, status = p.postJobLines(staged, p.jobAccountLine("STAGED-1")+"\n", false)
	if status != http.StatusAccepted || a.Rerun.NotRetryable != 1 || len(a.Rerun.Refused) != 1 || a.Rerun.Refused[0].JobLineOutcome == nil ||
		*a.Rerun.Refused[0].JobLineOutcome != "staged" || a.State != "COMPLETED" {
		t.Fatalf("a staged line: %d %s", status, raw)
	}

	// A cancelled job refuses, in the envelope.
	held := acceptedJob(t, p.postJob(p.token, "import_supplier=DEMO_ENERGY&operations_team_name=Migrations&schedule_window_start="+
		time.Now().Add(time.Hour).UTC().Format(time.RFC3339), strings.NewReader(p.invalidJobLine("HELD-1")+"\n"+p.jobAccountLine("HELD-2")+"\n"), false))
	if r := p.As(p.token, http.MethodPost, fmt.Sprintf("%s%d/cancel/", jobsURL, held), nil); r.Status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	_, raw, _, status = p.postJobLines(held, p.jobAccountLine("HELD-1")+"\n", false)
	var env struct{ Code, Detail string }
	_ = json.Unmarshal(raw, &env)
	if status != http.StatusConflict || env.Code != "job_not_rerunnable" || !strings.Contains(env.Detail, "CANCELLED") {
		t.Fatalf("a cancelled job: %d %s", status, raw)
	}
	if n := p.count(`SELECT count(*) FROM accounts WHERE external_account_number LIKE 'HELD-%'`); n != 0 {
		t.Fatalf("a cancelled job's re-run created %d accounts", n)
	}
}

// TestJobRerunRacesTheWorker: corrections posted while the worker is still
// creating the job's accounts, in several requests at once: every account
// is created once, and the counters add up at every read and at the end.
func TestJobRerunRacesTheWorker(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker()
	const n = 1200
	var body strings.Builder
	var fixes [4]strings.Builder
	for i := range n {
		ext := "RACE-" + strconv.Itoa(i)
		if i%4 == 0 {
			body.WriteString(p.badLine(i/4%len(rerunBadAccounts), ext) + "\n")
			fixes[i/4%4].WriteString(p.jobAccountLine(ext) + "\n")
			continue
		}
		body.WriteString(p.jobAccountLine(ext) + "\n")
	}
	id := acceptedJob(t, p.postJob(p.token, "import_supplier=DEMO_ENERGY&operations_team_name=Migrations", strings.NewReader(body.String()), true))
	var wg sync.WaitGroup
	accepted := make([]int64, len(fixes))
	for k := range fixes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(k) * 150 * time.Millisecond)
			a, raw, _, status := p.postJobLines(id, fixes[k].String(), true)
			if status != http.StatusAccepted {
				t.Errorf("re-run %d: %d %s", k, status, raw)
				return
			}
			accepted[k] = a.Rerun.Accepted
		}()
	}
	for {
		v := p.job(p.token, id)
		sum := int64(0)
		for k, c := range v.Counters {
			if k != "received" {
				sum += c
			}
		}
		if v.Counters["received"] == n && sum != n {
			t.Fatalf("counters add up to %d of %d mid-run: %v", sum, n, v.Counters)
		}
		if v.State == "COMPLETED" && p.count(`SELECT count(*) FROM accounts`) == n {
			break
		}
		if v.State != "PROCESSING" && v.State != "COMPLETED" {
			t.Fatalf("job %s", v.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
	wg.Wait()
	total := int64(0)
	for _, a := range accepted {
		total += a
	}
	if total != n/4 {
		t.Fatalf("%d corrections accepted, want %d", total, n/4)
	}
	v := p.waitJob(p.token, id, 2*time.Minute)
	checkCounters(t, v, map[string]int64{"received": n, "created": n})
	for q, want := range map[string]int64{
		`SELECT count(*) FROM accounts`: n, `SELECT count(DISTINCT external_account_number) FROM accounts`: n,
		`SELECT count(*) FROM import_attempts WHERE outcome = 'COMPLETED'`: n,
	} {
		if got := p.count(q); got != want {
			t.Errorf("%s = %d, want %d", q, got, want)
		}
	}
}

// TestJobRerunBodyIsBoundedAsAnUpload: a re-run's body has the upload's
// bounds and answers (its own code path): too many lines, a gzip bomb, a
// body that is not valid gzip, another media type. None changes the job or
// leaves corrections behind; then a good body is applied.
func TestJobRerunBodyIsBoundedAsAnUpload(t *testing.T) {
	p := newPipeline(t, func(c *testutil.StackConfig) { c.MaxJobLines = 1000 })
	id := acceptedJob(t, p.postJob(p.token, "import_supplier=DEMO_ENERGY&operations_team_name=Migrations",
		strings.NewReader(p.invalidJobLine("BOUND-1")+"\n"), false))
	good := p.jobAccountLine("BOUND-1") + "\n"
	cut := gz(t, []byte(good))
	cut = cut[:len(cut)-6]
	path := fmt.Sprintf("%s%d/lines/", jobsURL, id)
	for _, c := range []struct {
		name    string
		body    []byte
		headers []string
		status  int
		code    string
	}{
		{"more lines than MAX_JOB_LINES", []byte(strings.Repeat(good, 1001)), nil, http.StatusRequestEntityTooLarge, "too_many_lines"},
		{"blank lines inflating 1000x", gz(t, bytes.Repeat(append(bytes.Repeat([]byte(" "), 65535), '\n'), 128)), gzHeader(true),
			http.StatusRequestEntityTooLarge, "compression_ratio_exceeded"},
		{"gzip cut short", cut, gzHeader(true), http.StatusBadRequest, "parse_error"},
		{"not NDJSON", []byte(good), []string{"Content-Type", "text/csv"}, http.StatusUnsupportedMediaType, "unsupported_media_type"},
	} {
		r := p.postNDJSON(p.token, path, bytes.NewReader(c.body), false, c.headers...)
		if r.Status != c.status || r.JSON()["code"] != c.code {
			t.Fatalf("%s: %d %s, want %d %s", c.name, r.Status, r.Body, c.status, c.code)
		}
		if n := p.count(`SELECT count(*) FROM import_job_corrections`); n != 0 {
			t.Fatalf("%s: %d corrections left behind", c.name, n)
		}
		if v := p.job(p.token, id); v.Counters["invalid"] != 1 || v.Counters["pending"] != 0 {
			t.Fatalf("%s changed the job: %v", c.name, v.Counters)
		}
	}
	a, raw, _, status := p.postJobLines(id, good, true)
	if status != http.StatusAccepted || a.Rerun.Accepted != 1 || a.Counters["invalid"] != 0 || a.Counters["pending"] != 1 {
		t.Fatalf("a good body: %d %s", status, raw)
	}
}
