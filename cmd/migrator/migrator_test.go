package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// End-to-end tests: the real API and worker in-process on a private Postgres
// and Redis, the CLI talking to them over HTTP through a recording proxy.

var platformRe = regexp.MustCompile(`^A-[0-9A-F]{8}$`)

// shortLease keeps Retry-After (time to the earliest slot lease expiry)
// short, so that tests hitting the concurrency limit stay fast.
func shortLease(c *testutil.StackConfig) { c.SlotLease = 2 * time.Second }

type env struct {
	t     *testing.T
	st    *testutil.Stack
	key   string
	proxy *proxy
	dir   string
}

func newEnv(t *testing.T, opts ...testutil.StackOption) *env {
	t.Helper()
	st := testutil.NewStack(t, append([]testutil.StackOption{testutil.FastPipeline, shortLease}, opts...)...)
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	if _, err := st.DB.CreateTeam(context.Background(), "Migrations"); err != nil {
		t.Fatal(err)
	}
	st.StartWorker()
	return &env{t: t, st: st, key: ten.APIKey, proxy: newProxy(t, st.Server.URL), dir: t.TempDir()}
}

// accountLine is the sample account as one NDJSON line with another number.
func accountLine(t *testing.T, external string) string {
	t.Helper()
	b, err := testutil.ReadRepoFile("pkg/dataimport/testdata/account_valid.json")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), `"external_account_number": "EXT-0001"`, `"external_account_number": "`+external+`"`, 1)
	var out bytes.Buffer
	if err := json.Compact(&out, []byte(s)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"external_account_number":"`+external+`"`) {
		t.Fatal("sample account changed shape")
	}
	return out.String()
}

func (e *env) writeFile(name string, lines []string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func validLines(t *testing.T, prefix string, n int) []string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = accountLine(t, fmt.Sprintf("%s-%04d", prefix, i))
	}
	return lines
}

// run executes the CLI: soft is its graceful-stop context, abort aborts
// requests in flight.
func (e *env) run(soft, abort context.Context, args ...string) (string, error) {
	var out, errs bytes.Buffer
	c := &cli{abort: abort, stdout: &out, stderr: &syncWriter{w: &errs}}
	root := newRoot(c)
	root.SetArgs(append(args, "--api", e.proxy.URL, "--api-key", e.key, "--log-level", "info"))
	err := root.ExecuteContext(soft)
	if testing.Verbose() {
		e.t.Logf("migrator %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errs.String())
	}
	return out.String(), err
}

func (e *env) push(file, report string, extra ...string) (string, error) {
	return e.run(context.Background(), context.Background(),
		append([]string{"push", file, "--team", "Migrations", "--report", report}, extra...)...)
}

func (e *env) count(q string, args ...any) int64 {
	e.t.Helper()
	var n int64
	if err := e.st.DB.Gorm().Raw(q, args...).Scan(&n).Error; err != nil {
		e.t.Fatal(err)
	}
	return n
}

func readReport(t *testing.T, path string) []row {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 || strings.Join(recs[0], ",") != "external_account_number,outcome,platform_account_number,code,attr,detail" {
		t.Fatalf("report header: %v", recs)
	}
	rows := make([]row, 0, len(recs)-1)
	for _, r := range recs[1:] {
		rows = append(rows, row{External: r[0], Outcome: r[1], Platform: r[2], Code: r[3], Attr: r[4], Detail: r[5]})
	}
	return rows
}

func byAccount(rows []row) map[string][]row {
	m := map[string][]row{}
	for _, r := range rows {
		m[r.External] = append(m[r.External], r)
	}
	return m
}

// checkAllImported asserts exactly n accounts, each once, none twice.
func (e *env) checkAllImported(n int64) {
	e.t.Helper()
	if got := e.count(`SELECT count(*) FROM accounts`); got != n {
		e.t.Fatalf("%d accounts in the DB, want %d", got, n)
	}
	if d := e.count(`SELECT count(*) FROM (SELECT supplier_id, external_account_number FROM accounts
		GROUP BY 1, 2 HAVING count(*) > 1) d`); d != 0 {
		e.t.Fatalf("%d accounts created twice", d)
	}
}

func TestPush200WithConcurrencyLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := e.st.DB.SetConcurrencyLimit(context.Background(), 5); err != nil {
		t.Fatal(err)
	}
	file := e.writeFile("accounts.ndjson", validLines(t, "BULK", 200))
	report := filepath.Join(e.dir, "report.csv")
	out, err := e.push(file, report, "--parallel", "8")
	if err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	if !strings.Contains(out, "accounts 200: completed 200,") {
		t.Errorf("summary: %s", out)
	}
	rows := readReport(t, report)
	if len(rows) != 200 {
		t.Fatalf("%d report rows, want 200", len(rows))
	}
	seen := map[string]bool{}
	numbers := map[string]bool{}
	for _, r := range rows {
		if r.Outcome != outcomeCompleted || !platformRe.MatchString(r.Platform) || r.Code != "" {
			t.Fatalf("row %+v", r)
		}
		seen[r.External], numbers[r.Platform] = true, true
	}
	if len(seen) != 200 || len(numbers) != 200 {
		t.Fatalf("%d accounts, %d distinct platform numbers in the report", len(seen), len(numbers))
	}
	e.checkAllImported(200)
	// The report's numbers are the ones the API reports.
	var inDB int64 = e.count(`SELECT count(*) FROM accounts WHERE platform_account_number IN ?`, keys(numbers))
	if inDB != 200 {
		t.Fatalf("%d report numbers found in the DB", inDB)
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestPushInvalidAccountsAndStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	lines := validLines(t, "MIX", 15)
	badPhone := strings.Replace(accountLine(t, "BAD-PHONE"), `"mobile":"07400 123456"`, `"mobile":"12"`, 1)
	noChannel := strings.Replace(accountLine(t, "BAD-CHANNEL"), `"sales_channel":"PRICE_COMPARISON",`, ``, 1)
	twoErrors := strings.Replace(strings.Replace(accountLine(t, "BAD-TWO"), `"mobile":"07400 123456"`, `"mobile":"12"`, 1),
		`"account_type":"DOMESTIC"`, `"account_type":"ALIEN"`, 1)
	lines = append(lines[:5], append([]string{badPhone, "", noChannel, "{not json", twoErrors}, lines[5:]...)...)
	file := e.writeFile("mixed.ndjson", lines)
	report := filepath.Join(e.dir, "report.csv")

	out, err := e.push(file, report, "--parallel", "4")
	if !errors.Is(err, errSomeFailed) {
		t.Fatalf("push: %v, want errSomeFailed\n%s", err, out)
	}
	acc := byAccount(readReport(t, report))
	if len(acc) != 19 {
		t.Fatalf("%d accounts in the report, want 19: %v", len(acc), acc)
	}
	for i := range 15 {
		if r := acc[fmt.Sprintf("MIX-%04d", i)]; len(r) != 1 || r[0].Outcome != outcomeCompleted {
			t.Fatalf("MIX-%04d: %+v", i, r)
		}
	}
	want := map[string][][2]string{
		"BAD-PHONE":   {{"invalid_phone_number", "customers.0.mobile"}},
		"BAD-CHANNEL": {{"required", "sales_channel"}},
		"BAD-TWO":     {{"invalid_choice", "account_type"}, {"invalid_phone_number", "customers.0.mobile"}},
		"line 9":      {{"parse_error", "non_field_errors"}},
	}
	for ext, errs := range want {
		rows := acc[ext]
		if len(rows) != len(errs) {
			t.Fatalf("%s: %+v, want %d rows", ext, rows, len(errs))
		}
		got := map[[2]string]bool{}
		for _, r := range rows {
			if r.Outcome != outcomeFailed || r.Platform != "" || r.Detail == "" {
				t.Fatalf("%s row %+v", ext, r)
			}
			got[[2]string{r.Code, r.Attr}] = true
		}
		for _, w := range errs {
			if !got[w] {
				t.Errorf("%s: no row with code %q attr %q: %+v", ext, w[0], w[1], rows)
			}
		}
	}
	// A 400 is final: each invalid account was validated once, never staged
	// or created.
	for _, ext := range []string{"BAD-PHONE", "BAD-CHANNEL", "BAD-TWO"} {
		if n := e.proxy.calls("/validate-account/", ext); n != 1 {
			t.Errorf("%s validated %d times, want 1", ext, n)
		}
		if n := e.proxy.calls("/create-or-update/", ext) + e.proxy.calls("/process/", ext); n != 0 {
			t.Errorf("%s staged or created %d times", ext, n)
		}
	}
	e.checkAllImported(15)

	// A dry run stages but creates nothing: those accounts stay pending.
	dry := e.writeFile("dry.ndjson", validLines(t, "DRY", 5))
	dryReport := filepath.Join(e.dir, "dry.csv")
	if out, err := e.push(dry, dryReport, "--dry-run"); err != nil {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	for _, r := range readReport(t, dryReport) {
		if r.Outcome != outcomeDryRunOK || r.Code != "dry_run_rolled_back" {
			t.Fatalf("dry-run row %+v", r)
		}
	}
	e.checkAllImported(15)

	out, err = e.run(context.Background(), context.Background(), "status", "DEMO_ENERGY")
	if err != nil || out != "imported 15, pending 5, total 20\n" {
		t.Fatalf("status: %v %q", err, out)
	}
	out, err = e.run(context.Background(), context.Background(), "status", "DEMO_ENERGY", "--json")
	if err != nil || strings.TrimSpace(out) != `{"imported":15,"pending":5,"supplier":"DEMO_ENERGY","total":20}` {
		t.Fatalf("status --json: %v %q", err, out)
	}
	if _, err := e.run(context.Background(), context.Background(), "status", "NOPE"); err == nil || !strings.Contains(err.Error(), "supplier unknown") {
		t.Fatalf("status of an unknown supplier: %v", err)
	}
}

func TestPushStopAndResume(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	file := e.writeFile("accounts.ndjson", validLines(t, "RES", 200))
	args := func(report string) []string {
		return []string{"push", file, "--team", "Migrations", "--report", report, "--parallel", "8"}
	}
	// stopWhen cancels cancel once the DB holds at least n accounts.
	stopWhen := func(n int64, cancel ...context.CancelFunc) {
		for e.count(`SELECT count(*) FROM accounts`) < n {
			time.Sleep(5 * time.Millisecond)
		}
		for _, c := range cancel {
			c()
		}
	}

	// 1. Graceful stop (Ctrl-C) after ~70: accounts in flight finish, the
	// report lists exactly what exists.
	soft, stop := context.WithCancel(context.Background())
	go stopWhen(70, stop)
	report1 := filepath.Join(e.dir, "r1.csv")
	_, err := e.run(soft, context.Background(), args(report1)...)
	if !errors.Is(err, errInterrupted) {
		t.Fatalf("first run: %v, want errInterrupted", err)
	}
	rows1 := readReport(t, report1)
	created := e.count(`SELECT count(*) FROM accounts`)
	if len(rows1) < 70 || len(rows1) >= 200 || int64(len(rows1)) != created {
		t.Fatalf("first run: %d report rows, %d accounts in the DB", len(rows1), created)
	}
	for _, r := range rows1 {
		if r.Outcome != outcomeCompleted {
			t.Fatalf("graceful stop left %+v", r)
		}
	}
	if n := e.count(`SELECT count(*) FROM import_processes WHERE status = 'IN_PROGRESS'`); n != 0 {
		t.Fatalf("graceful stop left %d accounts in progress", n)
	}

	// 2. Hard abort (second Ctrl-C, or a kill) after ~140: requests in
	// flight are cut, whatever the server was doing goes on without us.
	soft, stop = context.WithCancel(context.Background())
	abort, kill := context.WithCancel(context.Background())
	go stopWhen(140, stop, kill)
	report2 := filepath.Join(e.dir, "r2.csv")
	if _, err := e.run(soft, abort, args(report2)...); !errors.Is(err, errInterrupted) {
		t.Fatalf("second run: %v, want errInterrupted", err)
	}
	skipped := 0
	for _, r := range readReport(t, report2) {
		if r.Outcome == outcomeSkippedCompleted {
			skipped++
		}
	}
	if skipped != len(rows1) {
		t.Fatalf("second run skipped %d, want %d", skipped, len(rows1))
	}

	// 3. Rerun to the end: exactly 200 accounts, none twice.
	report3 := filepath.Join(e.dir, "r3.csv")
	if out, err := e.run(context.Background(), context.Background(), args(report3)...); err != nil {
		t.Fatalf("third run: %v\n%s", err, out)
	}
	rows3 := readReport(t, report3)
	acc := byAccount(rows3)
	if len(rows3) != 200 || len(acc) != 200 {
		t.Fatalf("third run: %d rows for %d accounts", len(rows3), len(acc))
	}
	skipped = 0
	for _, r := range rows3 {
		switch r.Outcome {
		case outcomeSkippedCompleted:
			skipped++
		case outcomeCompleted:
		default:
			t.Fatalf("third run row %+v", r)
		}
		if !platformRe.MatchString(r.Platform) {
			t.Fatalf("third run row %+v", r)
		}
	}
	if skipped < 140 {
		t.Fatalf("third run skipped only %d accounts", skipped)
	}
	e.checkAllImported(200)
}

func TestPushThrottledAndTokenExpiry(t *testing.T) {
	t.Parallel()
	// Tokens live 1s (plus the API's clock-skew leeway, auth.ClockSkew), so
	// the run outlives several of them.
	e := newEnv(t, func(c *testutil.StackConfig) { c.TokenTTL = time.Second })
	if err := e.st.DB.SetConcurrencyLimit(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	// Each creation takes at least 250 ms and the cap of 1 makes them one at
	// a time, so the run lasts well past a token's life and its leeway.
	if err := e.st.DB.Gorm().Exec(`CREATE FUNCTION test_slow() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM pg_sleep(0.25); RETURN NEW; END $$;
		CREATE TRIGGER test_slow BEFORE INSERT ON accounts FOR EACH ROW EXECUTE FUNCTION test_slow()`).Error; err != nil {
		t.Fatal(err)
	}
	file := e.writeFile("accounts.ndjson", validLines(t, "THR", 32))
	report := filepath.Join(e.dir, "report.csv")
	out, err := e.push(file, report, "--parallel", "8")
	if err != nil {
		t.Fatalf("push: %v\n%s", err, out)
	}
	for _, r := range readReport(t, report) {
		if r.Outcome != outcomeCompleted {
			t.Fatalf("row %+v", r)
		}
	}
	e.checkAllImported(32)
	if n := e.proxy.status(http.StatusTooManyRequests); n == 0 {
		t.Fatal("no 429 seen: the limit was not exercised")
	}
	if n := e.proxy.status(http.StatusUnauthorized); n == 0 {
		t.Fatal("no 401 seen: the token never expired")
	}
	if n := e.proxy.calls("/v1/graphql/", ""); n < 2 {
		t.Fatalf("%d obtainToken calls: the token was never renewed", n)
	}
	if !strings.Contains(out, "completed 32,") {
		t.Fatalf("summary: %s", out)
	}
}

func TestPushPostImport(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Fakes behind the proxy answer as interface 4.2 and CONTRACT §7 say,
	// so that the test chooses the failures (the real endpoints: below).
	var mu sync.Mutex
	bodies := map[string][]map[string]any{}
	e.proxy.fake = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		kind := map[string]string{"/v1/data-import/notes/create/": "notes", "/v1/data-import/transactions/create/": "transactions",
			"/v1/data-import/historical-statements/create/": "statements"}[r.URL.Path]
		if kind == "" {
			return false
		}
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		mu.Lock()
		bodies[kind] = append(bodies[kind], m)
		mu.Unlock()
		items, _ := m[kind].([]any)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case kind == "notes":
			w.WriteHeader(http.StatusCreated)
			res := []map[string]any{}
			for range items {
				res = append(res, map[string]any{"status": "NOTE_CREATION_SUCCESS"})
			}
			_ = json.NewEncoder(w).Encode(res)
		case kind == "transactions" && m["external_account_number"] == "PI-0001":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"status":"TRANSACTION_IMPORT_ERROR","error_detail":"Not within the open statement period.","transaction_data":{"transaction_id":"T2"}}`)
		case kind == "transactions":
			w.WriteHeader(http.StatusCreated)
			res := []map[string]any{}
			for range items {
				res = append(res, map[string]any{"status": "TRANSACTION_ADDED_TO_ACCOUNT", "transaction_data": map[string]any{}})
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"results": res})
		case items[0].(map[string]any)["statement_id"] == "S-OLD":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"detail":"exists","code":"historical_statement_already_exists"}`)
		default:
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(items[0])
		}
		return true
	}
	post := filepath.Join(e.dir, "post")
	write := func(ext, name, content string) {
		if err := os.MkdirAll(filepath.Join(post, ext), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(post, ext, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("PI-0000", "notes.json", `[{"body":"one"},{"body":"two"}]`)
	write("PI-0000", "transactions.json", `{"transactions":[{"transaction_id":"T1","transaction_date":"2025-06-02","amount":1,"type":"CHARGE","reason":"IMPORTED_CHARGE"}]}`)
	write("PI-0000", "statements.json", `[{"statement_id":"S-OLD","bill_period_from_date":"2025-01-01","bill_period_to_date":"2025-01-31"},
		{"statement_id":"S-NEW","bill_period_from_date":"2025-02-01","bill_period_to_date":"2025-02-28"}]`)
	write("PI-0001", "transactions.json", `[{"transaction_id":"T2","transaction_date":"2020-01-01","amount":1,"type":"CHARGE","reason":"IMPORTED_CHARGE"}]`)

	file := e.writeFile("accounts.ndjson", validLines(t, "PI", 3))
	report := filepath.Join(e.dir, "report.csv")
	out, err := e.push(file, report, "--post-import", post)
	if !errors.Is(err, errSomeFailed) {
		t.Fatalf("push: %v, want errSomeFailed (one post-import failure)\n%s", err, out)
	}
	acc := byAccount(readReport(t, report))
	if r := acc["PI-0000"]; len(r) != 1 || r[0].Outcome != outcomeCompleted ||
		r[0].Detail != "post-import: notes 2 (2 new), transactions 1 (1 new), statements 2 (1 new)" {
		t.Fatalf("PI-0000: %+v", r)
	}
	if r := acc["PI-0001"]; len(r) != 2 || r[0].Outcome != outcomeCompleted || r[1].Outcome != outcomePostImportFailed ||
		r[1].Code != "TRANSACTION_IMPORT_ERROR" || r[1].Attr != "transactions" || !strings.Contains(r[1].Detail, "T2") {
		t.Fatalf("PI-0001: %+v", r)
	}
	if r := acc["PI-0002"]; len(r) != 1 || r[0].Outcome != outcomeCompleted || r[0].Detail != "" {
		t.Fatalf("PI-0002: %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	n := bodies["notes"]
	if len(n) != 1 || n[0]["import_supplier"] != "DEMO_ENERGY" || n[0]["external_account_number"] != "PI-0000" || len(n[0]["notes"].([]any)) != 2 {
		t.Fatalf("notes bodies: %v", n)
	}
	if len(bodies["transactions"]) != 2 || len(bodies["statements"]) != 2 {
		t.Fatalf("bodies: %v", bodies)
	}
}

// TestPushV2Window pushes through the asynchronous API with a schedule
// window: nothing is created before the window opens, every account is
// followed to its end through the v2 status, failures report latest_error,
// 429/5xx are retried, and a rerun skips what is done.
func TestPushV2Window(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// The database refuses one account at creation: it ends ERRORED.
	if err := e.st.DB.Gorm().Exec(`CREATE FUNCTION refuse_v2w() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'refused' USING ERRCODE = 'check_violation'; END $$;
		CREATE TRIGGER refuse_v2w BEFORE INSERT ON accounts FOR EACH ROW
		WHEN (NEW.external_account_number = 'V2W-REFUSED') EXECUTE FUNCTION refuse_v2w()`).Error; err != nil {
		t.Fatal(err)
	}
	// One 503 on a create and one 429 on a status read, retried as in v1.
	var mu sync.Mutex
	var failedCreate, throttledStatus bool
	e.proxy.fake = func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Method == http.MethodPost && r.URL.Path == apiV2Accounts && !failedCreate:
			failedCreate = true
			w.WriteHeader(http.StatusServiceUnavailable)
			return true
		case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, apiV2Accounts) && !throttledStatus:
			throttledStatus = true
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return true
		}
		return false
	}
	lines := append(validLines(t, "V2W", 6), accountLine(t, "V2W-REFUSED"),
		strings.Replace(accountLine(t, "V2W-INVALID"), `"mobile":"07400 123456"`, `"mobile":"12"`, 1))
	file := e.writeFile("v2.ndjson", lines)
	start := time.Now().Add(3 * time.Second).Truncate(time.Second)
	end := start.Add(2 * time.Minute)
	window := []string{"--v2", "--window-start", start.Format(time.RFC3339), "--window-end", end.Format(time.RFC3339)}
	report := filepath.Join(e.dir, "v2.csv")
	out, err := e.run(context.Background(), context.Background(), append([]string{"push", file, "--report", report}, window...)...)
	if !errors.Is(err, errSomeFailed) {
		t.Fatalf("push --v2: %v, want errSomeFailed\n%s", err, out)
	}
	if !strings.Contains(out, "accounts 8: completed 6,") || !strings.Contains(out, "failed 2,") {
		t.Errorf("summary: %s", out)
	}
	acc := byAccount(readReport(t, report))
	for i := range 6 {
		if r := acc[fmt.Sprintf("V2W-%04d", i)]; len(r) != 1 || r[0].Outcome != outcomeCompleted || !platformRe.MatchString(r[0].Platform) {
			t.Fatalf("V2W-%04d: %+v", i, r)
		}
	}
	if r := acc["V2W-REFUSED"]; len(r) != 1 || r[0].Outcome != outcomeFailed || r[0].Code != "data_refused" ||
		!strings.Contains(r[0].Detail, "(ERRORED, validation)") {
		t.Fatalf("V2W-REFUSED: %+v", r)
	}
	if r := acc["V2W-INVALID"]; len(r) != 1 || r[0].Code != "invalid_phone_number" || r[0].Attr != "customers.0.mobile" {
		t.Fatalf("V2W-INVALID: %+v", r)
	}
	e.checkAllImported(6)
	if early := e.count(`SELECT count(*) FROM accounts WHERE created_at < ?`, start); early != 0 {
		t.Fatalf("%d accounts created before the window opened at %v", early, start)
	}
	if n := e.count(`SELECT count(*) FROM import_processes WHERE window_start = ? AND window_end = ?`, start, end); n != 7 {
		t.Fatalf("%d processes scheduled with the window, want 7", n)
	}
	// Only the v2 API: one create per account (plus the retried 503), no v1 staging or creation.
	if n := e.proxy.calls(apiV2Accounts, ""); n != 9 {
		t.Errorf("%d v2 creates, want 8 and one retry", n)
	}
	for _, v1 := range []string{"/validate-account/", "/create-or-update/", "/process/"} {
		for i := range 6 {
			if n := e.proxy.calls(v1, fmt.Sprintf("V2W-%04d", i)); n != 0 {
				t.Errorf("v1 %s called %d times", v1, n)
			}
		}
	}
	if e.proxy.status(http.StatusTooManyRequests) != 1 || e.proxy.status(http.StatusServiceUnavailable) != 1 {
		t.Errorf("the injected 429 and 503 were not seen")
	}

	// A rerun skips what is done and tries the failed ones again.
	report2 := filepath.Join(e.dir, "v2-rerun.csv")
	if _, err := e.run(context.Background(), context.Background(), "push", file, "--report", report2, "--v2"); !errors.Is(err, errSomeFailed) {
		t.Fatalf("rerun: %v", err)
	}
	acc = byAccount(readReport(t, report2))
	for i := range 6 {
		if r := acc[fmt.Sprintf("V2W-%04d", i)]; len(r) != 1 || r[0].Outcome != outcomeSkippedCompleted {
			t.Fatalf("rerun V2W-%04d: %+v", i, r)
		}
	}
	if r := acc["V2W-REFUSED"]; len(r) != 1 || r[0].Code != "data_refused" {
		t.Fatalf("rerun V2W-REFUSED: %+v", r)
	}
	e.checkAllImported(6)

	// A dry run through v2 creates nothing.
	dry := e.writeFile("v2-dry.ndjson", validLines(t, "V2D", 2))
	dryReport := filepath.Join(e.dir, "v2-dry.csv")
	if out, err := e.run(context.Background(), context.Background(), "push", dry, "--report", dryReport, "--v2", "--dry-run"); err != nil {
		t.Fatalf("v2 dry run: %v\n%s", err, out)
	}
	for _, r := range readReport(t, dryReport) {
		if r.Outcome != outcomeDryRunOK || r.Code != "DRY_RUN_SUCCEEDED" {
			t.Fatalf("v2 dry-run row %+v", r)
		}
	}
	e.checkAllImported(6)

	// The window flags belong to --v2 and are checked before anything is sent.
	if _, err := e.push(file, report2, "--window-start", start.Format(time.RFC3339)); err == nil || !strings.Contains(err.Error(), "need --v2") {
		t.Fatalf("--window-start without --v2: %v", err)
	}
	if _, err := e.run(context.Background(), context.Background(), "push", file, "--v2", "--window-end", "tomorrow"); err == nil ||
		!strings.Contains(err.Error(), "RFC 3339") {
		t.Fatalf("bad --window-end: %v", err)
	}
}

func TestShiftAttr(t *testing.T) {
	for in, want := range map[string]string{"notes.3.body": "notes.503.body", "notes.0": "notes.500", "": "notes",
		"non_field_errors": "non_field_errors", "notes.x": "notes.x"} {
		if got := shiftAttr(in, "notes", 500); got != want {
			t.Errorf("shiftAttr(%q) = %q, want %q", in, got, want)
		}
	}
}

// ---- recording proxy ----

// proxy sits between the CLI and the API, counting requests per path and
// account and responses per status; fake may answer instead of the API.
type proxy struct {
	*httptest.Server
	mu       sync.Mutex
	byCall   map[string]int
	byStatus map[int]int
	fake     func(w http.ResponseWriter, r *http.Request, body []byte) bool
}

func newProxy(t *testing.T, target string) *proxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{byCall: map[string]int{}, byStatus: map[int]int{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0) // aborted requests are expected
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var id struct {
			External string `json:"external_account_number"`
		}
		_ = json.Unmarshal(body, &id)
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		if p.fake == nil || !p.fake(rec, r, body) {
			rp.ServeHTTP(rec, r)
		}
		p.mu.Lock()
		p.byCall[r.URL.Path+"|"+id.External]++
		p.byStatus[rec.status]++
		p.mu.Unlock()
	}))
	t.Cleanup(p.Close)
	return p
}

// calls counts requests whose path ends with suffix for one account.
func (p *proxy) calls(suffix, external string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for k, v := range p.byCall {
		path, ext, _ := strings.Cut(k, "|")
		if strings.HasSuffix(path, suffix) && ext == external {
			n += v
		}
	}
	return n
}

func (p *proxy) status(code int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byStatus[code]
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// TestPushPostImportRealEndpoints sends the interface's sample files to the
// real post-import endpoints, twice: the rerun re-sends them and nothing is
// added twice.
func TestPushPostImportRealEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	post := filepath.Join(e.dir, "post")
	if err := os.MkdirAll(filepath.Join(post, "EXT-0001"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"notes", "transactions", "statements"} {
		b, err := testutil.ReadRepoFile("pkg/dataimport/testdata/" + k + "_sample.json")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(post, "EXT-0001", k+".json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	file := e.writeFile("accounts.ndjson", []string{accountLine(t, "EXT-0001")})
	var details []string
	for i, want := range []string{outcomeCompleted, outcomeSkippedCompleted} {
		report := filepath.Join(e.dir, fmt.Sprintf("r%d.csv", i))
		if out, err := e.push(file, report, "--post-import", post); err != nil {
			t.Fatalf("run %d: %v\n%s\n%+v", i, err, out, readReport(t, report))
		}
		rows := readReport(t, report)
		if len(rows) != 1 || rows[0].Outcome != want {
			t.Fatalf("run %d: %+v", i, rows)
		}
		details = append(details, rows[0].Detail)
	}
	first := regexp.MustCompile(`^post-import: notes (\d+) \((\d+) new\), transactions (\d+) \((\d+) new\), statements (\d+) \((\d+) new\)$`)
	m := first.FindStringSubmatch(details[0])
	if m == nil || m[1] != m[2] || m[3] != m[4] || m[5] != m[6] || m[1] == "0" || m[3] == "0" || m[5] == "0" {
		t.Fatalf("first run: %q", details[0])
	}
	if want := fmt.Sprintf("post-import: notes %s (0 new), transactions %s (0 new), statements %s (0 new)", m[1], m[3], m[5]); details[1] != want {
		t.Fatalf("rerun: %q, want %q", details[1], want)
	}
	t.Logf("first run: %s; rerun: %s", details[0], details[1])
}
