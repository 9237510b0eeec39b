package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// Control totals and reconciliation (CONTRACT §14) end to end: a job's
// declared totals beside what it received and created, what landed in the
// platform's tables beside what was staged, and landed_digest.

type controlView struct {
	Control []struct {
		Name     string  `json:"name"`
		Declared string  `json:"declared"`
		Received string  `json:"received"`
		Created  *string `json:"created"`
		Result   string  `json:"result"`
	} `json:"control"`
	Reconciliation string `json:"reconciliation"`
	State          string `json:"state"`
}

func (p *pipeline) jobControl(token string, id int64) controlView {
	p.TB.Helper()
	r := p.As(token, http.MethodGet, jobsURL+strconv.FormatInt(id, 10)+"/", nil)
	if r.Status != http.StatusOK {
		p.TB.Fatalf("job %d: %d %s", id, r.Status, r.Body)
	}
	var v controlView
	r.Decode(&v)
	return v
}

// balanceLine is the sample account for external with transfer_balance b.
func (p *pipeline) balanceLine(external, b string) string {
	p.TB.Helper()
	line := p.jobAccountLine(external)
	const from = `"transfer_balance":"-42.50"`
	if !strings.Contains(line, from) {
		p.TB.Fatal("sample account changed shape")
	}
	return strings.Replace(line, from, `"transfer_balance":"`+b+`"`, 1)
}

// sample figures: 2 meter points, opening transactions 12.5 + 55.00 + 90.21.
const sampleMeterPoints, sampleTransactions = 2, "157.71"

func TestJobControlTotalBalanceOneCentOff(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker()
	const n = 12
	var body strings.Builder
	total := decimal.Zero
	for i := range n {
		b := decimal.New(int64(1000+i*37), -2) // 10.00, 10.37, ...
		total = total.Add(b)
		body.WriteString(p.balanceLine(fmt.Sprintf("CTL-%02d", i), b.StringFixed(2)) + "\n")
	}
	// A line repeated later replaces the earlier one: its account is received once.
	body.WriteString(p.balanceLine("CTL-00", "10.00") + "\n")
	txs := decimal.RequireFromString(sampleTransactions).Mul(decimal.NewFromInt(n))
	off := total.Add(decimal.New(1, -2))
	q := fmt.Sprintf("import_supplier=DEMO_ENERGY&operations_team_name=Migrations&expected_accounts=%d&expected_transfer_balance_total=%s"+
		"&expected_opening_transactions_total=%s&expected_meter_points=%d", n, off.StringFixed(2), txs.StringFixed(2), n*sampleMeterPoints)
	id := acceptedJob(t, p.postJob(p.token, q, strings.NewReader(body.String()), false))
	p.waitJob(p.token, id, 60*time.Second)
	v := p.jobControl(p.token, id)
	if v.Reconciliation != "mismatch" || len(v.Control) != 4 {
		t.Fatalf("reconciliation %q, control %+v", v.Reconciliation, v.Control)
	}
	for _, c := range v.Control {
		want := "match"
		if c.Name == "transfer_balance_total" {
			want = "mismatch"
			if c.Declared != off.StringFixed(2) || !decimal.RequireFromString(c.Received).Equal(total) ||
				c.Created == nil || !decimal.RequireFromString(*c.Created).Equal(total) {
				t.Errorf("balance total %+v, sent %s", c, total)
			}
		}
		if c.Result != want || c.Created == nil {
			t.Errorf("%s: %+v, want %s", c.Name, c, want)
		}
	}

	// Declared exactly: match. Declared nothing: none.
	q = strings.Replace(q, "expected_transfer_balance_total="+off.StringFixed(2), "expected_transfer_balance_total="+total.StringFixed(2), 1)
	var again strings.Builder
	for i := range n {
		again.WriteString(p.balanceLine(fmt.Sprintf("CTL2-%02d", i), decimal.New(int64(1000+i*37), -2).StringFixed(2)) + "\n")
	}
	id = acceptedJob(t, p.postJob(p.token, q, strings.NewReader(again.String()), false))
	p.waitJob(p.token, id, 60*time.Second)
	if v := p.jobControl(p.token, id); v.Reconciliation != "match" {
		t.Errorf("exact totals: %+v", v)
	}
	id = acceptedJob(t, p.postJob(p.token, "import_supplier=DEMO_ENERGY&create=false", strings.NewReader(p.jobAccountLine("CTL3-1")+"\n"), false))
	if v := p.jobControl(p.token, id); v.Reconciliation != "none" || len(v.Control) != 0 {
		t.Errorf("nothing declared: %+v", v)
	}
	// A trailing control line declares them instead (over the query's) and is no line of the results.
	body2 := p.jobAccountLine("CTL5-1") + "\n" + `{"control": {"expected_accounts": 1, "expected_meter_points": "2"}}` + "\n"
	id = acceptedJob(t, p.postJob(p.token, "import_supplier=DEMO_ENERGY&operations_team_name=Migrations&expected_accounts=7", strings.NewReader(body2), false))
	p.waitJob(p.token, id, time.Minute)
	if v := p.jobControl(p.token, id); v.Reconciliation != "match" || len(v.Control) != 2 {
		t.Errorf("control line: %+v", v)
	}
	if res := p.jobResults(p.token, id, "all"); len(res) != 1 || res[0].Outcome != "created" {
		t.Errorf("results with a control line: %+v", res)
	}
	// A total with more than 2 places, a negative count: refused.
	r := p.postJob(p.token, "import_supplier=DEMO_ENERGY&create=false&expected_transfer_balance_total=1.001&expected_accounts=-1",
		strings.NewReader(p.jobAccountLine("CTL4-1")+"\n"), false)
	if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "expected_transfer_balance_total") ||
		!strings.Contains(string(r.Body), "expected_accounts") {
		t.Errorf("bad declared totals: %d %s", r.Status, r.Body)
	}
}

type reconciliationView struct {
	Landed      map[string]string `json:"landed"`
	Staged      map[string]string `json:"staged"`
	Differences []struct {
		External string `json:"external_account_number"`
		Field    string `json:"field"`
		Landed   string `json:"landed"`
		Staged   string `json:"staged"`
	} `json:"differences"`
	DifferingAccounts int64 `json:"differing_accounts"`
	MoreDifferences   int64 `json:"more_differences"`
}

func (p *pipeline) reconciliation(token, query string) reconciliationView {
	p.TB.Helper()
	r := p.As(token, http.MethodGet, "/v1/data-import/reconciliation/?"+query, nil)
	if r.Status != http.StatusOK {
		p.TB.Fatalf("reconciliation %s: %d %s", query, r.Status, r.Body)
	}
	var v reconciliationView
	r.Decode(&v)
	return v
}

type digestLine struct {
	External string  `json:"external_account_number"`
	Outcome  string  `json:"outcome"`
	Digest   *string `json:"landed_digest"`
}

func (p *pipeline) jobDigests(token string, id int64) map[string]string {
	p.TB.Helper()
	r := p.As(token, http.MethodGet, fmt.Sprintf("%s%d/results/?format=ndjson", jobsURL, id), nil)
	if r.Status != http.StatusOK {
		p.TB.Fatalf("results: %d %s", r.Status, r.Body)
	}
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(r.Body)), "\n") {
		var d digestLine
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			p.TB.Fatal(err)
		}
		if d.Outcome == "created" {
			if d.Digest == nil || !strings.HasPrefix(*d.Digest, "sha256:") || len(*d.Digest) != 7+64 {
				p.TB.Fatalf("created line without a landed_digest: %s", l)
			}
			out[d.External] = *d.Digest
		} else if d.Digest != nil {
			p.TB.Fatalf("a line not created has a landed_digest: %s", l)
		}
	}
	return out
}

// TestReconciliationEqualsSourceAndNamesATamperedAccount: after a
// 5,000-account job (300 with -short) what landed equals what was staged,
// figure by figure; one transaction altered in the database is named by
// reconciliation and by that account's landed_digest alone.
func TestReconciliationEqualsSourceAndNamesATamperedAccount(t *testing.T) {
	t.Parallel() // its own stack; runs beside TestWorkerSIGKILLMidBatch's wait
	p := newPipeline(t)
	p.StartWorker()
	n := 5000
	if testing.Short() {
		n = 300
	}
	var body strings.Builder
	for i := range n {
		body.WriteString(p.balanceLine(fmt.Sprintf("REC-%05d", i), decimal.New(int64(i*13-900), -2).StringFixed(2)) + "\n")
	}
	id := acceptedJob(t, p.postJob(p.token, "import_supplier=DEMO_ENERGY&operations_team_name=Migrations", strings.NewReader(body.String()), false))
	if v := p.waitJob(p.token, id, 10*time.Minute); v.Counters["created"] != int64(n) {
		t.Fatalf("job: %+v", v)
	}
	query := fmt.Sprintf("import_supplier=DEMO_ENERGY&job=%d", id)
	rec := p.reconciliation(p.token, query)
	if len(rec.Differences) != 0 || rec.DifferingAccounts != 0 {
		t.Fatalf("differences after a clean job: %+v", rec.Differences[:min(5, len(rec.Differences))])
	}
	if rec.Landed["accounts"] != strconv.Itoa(n) || rec.Landed["meter_points"] != strconv.Itoa(n*sampleMeterPoints) {
		t.Errorf("landed totals %v", rec.Landed)
	}
	for k, v := range rec.Landed {
		if !decimal.RequireFromString(v).Equal(decimal.RequireFromString(rec.Staged[k])) {
			t.Errorf("%s: landed %s, staged %s", k, v, rec.Staged[k])
		}
	}
	before := p.jobDigests(p.token, id)
	if len(before) != n {
		t.Fatalf("%d digests for %d accounts", len(before), n)
	}
	// The v1 status carries the same digest as the job's results.
	if st := p.status("REC-00007"); st["landed_digest"] != before["REC-00007"] {
		t.Errorf("v1 status landed_digest %v, job %s", st["landed_digest"], before["REC-00007"])
	}

	const victim = "REC-00042"
	// Read (and so kept) before the change: the kept digest must not outlive it.
	if st := p.status(victim); st["landed_digest"] != before[victim] {
		t.Errorf("v1 status landed_digest %v, job %s", st["landed_digest"], before[victim])
	}
	if err := p.DB.Gorm().Exec(`UPDATE account_transactions SET amount = amount + 0.01
		WHERE transaction_id = 'TX-EXT-0001-002' AND account_id = (SELECT id FROM accounts WHERE external_account_number = ?)`, victim).Error; err != nil {
		t.Fatal(err)
	}
	rec = p.reconciliation(p.token, query)
	if rec.DifferingAccounts != 1 || len(rec.Differences) != 1 {
		t.Fatalf("after altering one transaction: %+v", rec)
	}
	if d := rec.Differences[0]; d.External != victim || d.Field != "transactions.PAYMENT.amount" || d.Landed != "55.01" || d.Staged != "55" {
		t.Errorf("difference %+v", d)
	}
	after := p.jobDigests(p.token, id)
	for ext, d := range before {
		if changed := after[ext] != d; changed != (ext == victim) {
			t.Errorf("%s: digest changed %v", ext, changed)
		}
	}
	if st := p.status(victim); st["landed_digest"] != after[victim] {
		t.Errorf("after the change: v1 status landed_digest %v, job %s", st["landed_digest"], after[victim])
	}
	if v2 := p.As(p.token, http.MethodGet, "/v2/data-import/accounts/DEMO_ENERGY/"+victim+"/", nil).JSON()["landed_digest"]; v2 != after[victim] {
		t.Errorf("after the change: v2 landed_digest %v, job %s", v2, after[victim])
	}
	// The whole supplier, and since the job's creation, see it too.
	if all := p.reconciliation(p.token, "import_supplier=DEMO_ENERGY"); all.DifferingAccounts != 1 {
		t.Errorf("supplier-wide: %+v", all)
	}
	if later := p.reconciliation(p.token, "import_supplier=DEMO_ENERGY&since="+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)); later.Landed["accounts"] != "0" {
		t.Errorf("nothing created since an hour from now: %+v", later.Landed)
	}
	// Another organisation's view of the job: not found.
	other := p.Tenant("Other Partner", "DEMO_ENERGY")
	if r := p.As(other.Token, http.MethodGet, "/v1/data-import/reconciliation/?"+query, nil); r.Status != http.StatusNotFound {
		t.Errorf("another organisation's job: %d %s", r.Status, r.Body)
	}
}

// TestLandedDigestSameWhicheverPath: the same account created by v1 under
// one supplier and by a job under another has one landed_digest, shown by
// the v1 and v2 status and the job's results alike.
func TestLandedDigestSameWhicheverPath(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker()
	p.ImportAccount(p.token, "DEMO_ENERGY", "SAME-1", "Migrations")
	v1 := p.status("SAME-1")["landed_digest"]
	if s, ok := v1.(string); !ok || !strings.HasPrefix(s, "sha256:") {
		t.Fatalf("v1 status landed_digest %v", v1)
	}
	v2 := p.As(p.token, http.MethodGet, "/v2/data-import/accounts/DEMO_ENERGY/SAME-1/", nil).JSON()["landed_digest"]
	if v2 != v1 {
		t.Errorf("v2 %v, v1 %v", v2, v1)
	}
	p.Supplier("SECOND_ENERGY")
	two := p.Tenant("Second Partner", "SECOND_ENERGY")
	line := strings.Replace(p.jobAccountLine("SAME-1"), `"import_supplier":"DEMO_ENERGY"`, `"import_supplier":"SECOND_ENERGY"`, 1)
	id := acceptedJob(t, p.postJob(two.Token, "import_supplier=SECOND_ENERGY&operations_team_name=Migrations", strings.NewReader(line+"\n"), false))
	p.waitJob(two.Token, id, time.Minute)
	if got := p.jobDigests(two.Token, id)["SAME-1"]; got != v1 {
		t.Errorf("job %s, v1 %v", got, v1)
	}
	// Not created yet: null.
	p.stage("SAME-2")
	if st := p.status("SAME-2"); st["landed_digest"] != nil {
		t.Errorf("staged only: landed_digest %v", st["landed_digest"])
	}
}
