package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/gridshift/dataimport/pkg/testutil"
)

const (
	stagePath  = "/v1/data-import/account-import-process/create-or-update/"
	createPath = "/v1/data-import/account-import-process/process/"
)

var platformNumberRe = regexp.MustCompile(`^A-[0-9A-F]{8}$`)

type pipeline struct {
	*testutil.Stack
	token string
}

func newPipeline(t *testing.T, opts ...testutil.StackOption) *pipeline {
	t.Helper()
	st := testutil.NewStack(t, append([]testutil.StackOption{testutil.FastPipeline}, opts...)...)
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	if _, err := st.DB.CreateTeam(context.Background(), "Migrations"); err != nil {
		t.Fatal(err)
	}
	return &pipeline{Stack: st, token: ten.Token}
}

func (p *pipeline) account(external string) string {
	p.TB.Helper()
	b, err := testutil.ReadRepoFile("pkg/dataimport/testdata/account_valid.json")
	if err != nil {
		p.TB.Fatal(err)
	}
	return strings.Replace(string(b), `"EXT-0001"`, `"`+external+`"`, 1)
}

func (p *pipeline) stage(external string) {
	p.TB.Helper()
	if r := p.As(p.token, http.MethodPost, stagePath, p.account(external)); r.Status != http.StatusCreated && r.Status != http.StatusOK {
		p.TB.Fatalf("stage %s: %d %s", external, r.Status, r.Body)
	}
}

func (p *pipeline) create(external string, extra map[string]any, headers ...string) testutil.Response {
	p.TB.Helper()
	body := map[string]any{"external_account_number": external, "import_supplier_code": "DEMO_ENERGY", "operations_team_name": "Migrations"}
	for k, v := range extra {
		body[k] = v
	}
	return p.As(p.token, http.MethodPost, createPath, body, headers...)
}

func (p *pipeline) status(external string) map[string]any {
	p.TB.Helper()
	return p.As(p.token, http.MethodGet, "/v1/data-import/account-transfer-status/DEMO_ENERGY/"+external+"/", nil).JSON()
}

func (p *pipeline) count(query string, args ...any) int64 {
	p.TB.Helper()
	var n int64
	if err := p.DB.Gorm().Raw(query, args...).Scan(&n).Error; err != nil {
		p.TB.Fatal(err)
	}
	return n
}

func TestCreateHappyPath(t *testing.T) {
	p := newPipeline(t)
	w := p.StartWorker()
	p.stage("EXT-1")
	r := p.create("EXT-1", nil)
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	body := r.JSON()
	number, _ := body["platform_account_number"].(string)
	if !platformNumberRe.MatchString(number) || body["external_account_number"] != "EXT-1" {
		t.Fatalf("create body: %s", r.Body)
	}
	st := p.status("EXT-1")
	if st["status"] != "COMPLETED" || st["platform_account_number"] != number || st["account_created_at"] == nil {
		t.Fatalf("status: %v", st)
	}
	var imported []map[string]any
	p.As(p.token, http.MethodGet, "/v1/data-import/imported-account-import-processes/DEMO_ENERGY/", nil).Decode(&imported)
	if len(imported) != 1 || imported[0]["platform_account_number"] != number {
		t.Fatalf("imported list: %v", imported)
	}
	// Second create: 400 with both numbers.
	r = p.create("EXT-1", nil)
	if r.Status != http.StatusBadRequest || r.JSON()["code"] != "account_already_imported" ||
		r.JSON()["platform_account_number"] != number || r.JSON()["external_account_number"] != "EXT-1" {
		t.Fatalf("second create: %d %s", r.Status, r.Body)
	}
	if n := p.count(`SELECT count(*) FROM accounts`); n != 1 {
		t.Fatalf("%d accounts", n)
	}
	if n := p.count(`SELECT count(*) FROM account_customers`); n != 2 {
		t.Fatalf("%d customers", n)
	}
	// Pipeline metrics on the worker's /metrics.
	rec := httptest.NewRecorder()
	w.Probes.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, want := range []string{`dataimport_accounts_total{outcome="COMPLETED",supplier="DEMO_ENERGY"} 1`,
		"dataimport_account_job_duration_seconds_count", "dataimport_queue_depth 0", "dataimport_accounts_in_progress 0",
		`go_sql_wait_count_total{db_name="primary"}`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("worker metrics lack %q", want)
		}
	}
	// The API's: one staging request, in one statement of one row.
	if m := p.Request(http.MethodGet, "/metrics", nil).Body; !strings.Contains(string(m), "dataimport_stage_statement_rows_sum 1\n") ||
		!strings.Contains(string(m), "dataimport_stage_statement_rows_count 1\n") {
		t.Errorf("api metrics lack the staging statement of one row")
	}
	// Each pool's waits for a connection: a saturated pool makes every
	// request of a process wait at once.
	if m := p.Request(http.MethodGet, "/metrics", nil).Body; !strings.Contains(string(m), `go_sql_wait_duration_seconds_total{db_name="primary"}`) {
		t.Errorf("api metrics lack the pool's waits")
	}
}

func TestCreateRefusals(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker()
	p.stage("EXT-1")
	cases := []struct {
		name  string
		body  map[string]any
		raw   string
		code  string
		attrs []string
	}{
		{name: "invalid body", raw: `{"external_account_number": "EXT-1", "dry_run": "maybe", "colour": 1}`, code: "invalid_payload",
			attrs: []string{"import_supplier_code", "operations_team_name", "dry_run", "colour"}},
		{name: "missing team", body: map[string]any{"operations_team_name": "Nobody"}, code: "operations_team_name_does_not_exist"},
		{name: "no staged data", body: map[string]any{"external_account_number": "EXT-NEVER"}, code: "import_process_does_not_exist"},
		{name: "unknown supplier", body: map[string]any{"import_supplier_code": "NOPE"}, code: "import_supplier_not_found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r testutil.Response
			if tc.raw != "" {
				r = p.As(p.token, http.MethodPost, createPath, tc.raw)
			} else {
				r = p.create(pick(tc.body, "external_account_number", "EXT-1"), tc.body)
			}
			if r.Status != http.StatusBadRequest || r.JSON()["code"] != tc.code {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			for _, a := range tc.attrs {
				if !strings.Contains(string(r.Body), `"attr":"`+a+`"`) {
					t.Errorf("no error for %s: %s", a, r.Body)
				}
			}
		})
	}
	must(t, p.DB.SetSupplierStatus(context.Background(), "DEMO_ENERGY", "Paused"))
	if r := p.create("EXT-1", nil); r.Status != http.StatusBadRequest || r.JSON()["code"] != "import_supplier_migration_not_ongoing" {
		t.Fatalf("paused: %d %s", r.Status, r.Body)
	}
	if n := p.count(`SELECT count(*) FROM import_processes WHERE status <> 'UNKNOWN'`); n != 0 {
		t.Fatalf("a refused create changed %d processes", n)
	}
}

func pick(m map[string]any, k, def string) string {
	if v, ok := m[k].(string); ok {
		return v
	}
	return def
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestDryRun(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker()
	p.stage("EXT-1")
	r := p.create("EXT-1", map[string]any{"dry_run": true})
	if r.Status != http.StatusBadRequest || r.JSON()["code"] != "dry_run_rolled_back" ||
		r.JSON()["detail"] != "Account would import successfully. Rolled back due to dry run." {
		t.Fatalf("dry run: %d %s", r.Status, r.Body)
	}
	for _, table := range []string{"accounts", "account_customers", "supply_addresses", "meter_points", "agreements", "account_notes", "account_transactions", "statements", "welcome_emails"} {
		if n := p.count(`SELECT count(*) FROM ` + table); n != 0 {
			t.Fatalf("dry run left %d rows in %s", n, table)
		}
	}
	if st := p.status("EXT-1"); st["status"] != "UNKNOWN" || st["platform_account_number"] != "" {
		t.Fatalf("status after dry run: %v", st)
	}
	// And then for real.
	if r := p.create("EXT-1", nil); r.Status != http.StatusCreated {
		t.Fatalf("create after dry run: %d %s", r.Status, r.Body)
	}
}

func TestInvalidStagedDataFailsInWorker(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker()
	p.stage("EXT-1")
	// Corrupt the staged payload behind the API's back.
	must(t, p.DB.Gorm().Exec(`UPDATE import_process_versions SET payload = jsonb_set(payload, '{customers,0,mobile}', '"12"')`).Error)
	r := p.create("EXT-1", nil)
	if r.Status != http.StatusBadRequest || r.JSON()["code"] != "account_failed_validation" ||
		!strings.Contains(string(r.Body), `"attr":"customers.0.mobile"`) {
		t.Fatalf("create with bad staged data: %d %s", r.Status, r.Body)
	}
	st := p.status("EXT-1")
	le, _ := st["latest_error"].(map[string]any)
	if st["status"] != "UNKNOWN" || le["code"] != "account_failed_validation" {
		t.Fatalf("status: %v", st)
	}
	if n := p.count(`SELECT count(*) FROM accounts`); n != 0 {
		t.Fatalf("%d accounts", n)
	}
}

func TestConcurrentCreatesOneAccount(t *testing.T) {
	p := newPipeline(t)
	p.StartWorker()
	p.stage("EXT-1")
	const callers = 50
	numbers := make([]string, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := p.create("EXT-1", nil)
			switch r.Status {
			case http.StatusCreated:
				numbers[i], _ = r.JSON()["platform_account_number"].(string)
			case http.StatusBadRequest:
				if r.JSON()["code"] == "account_already_imported" {
					numbers[i], _ = r.JSON()["platform_account_number"].(string)
				}
			}
			if numbers[i] == "" {
				t.Errorf("caller %d: %d %s", i, r.Status, r.Body)
			}
		}()
	}
	wg.Wait()
	for i := range numbers {
		if numbers[i] != numbers[0] {
			t.Fatalf("callers saw different numbers: %v", numbers)
		}
	}
	if n := p.count(`SELECT count(*) FROM accounts`); n != 1 {
		t.Fatalf("%d accounts", n)
	}
	if n := p.count(`SELECT count(*) FROM import_attempts`); n != 1 {
		t.Fatalf("%d attempts", n)
	}
}

func TestRespondAsync(t *testing.T) {
	p := newPipeline(t)
	p.stage("EXT-1")
	// No worker yet: the job waits in the queue.
	r := p.create("EXT-1", nil, "Prefer", "respond-async")
	if r.Status != http.StatusAccepted || r.JSON()["status"] != "IN_PROGRESS" ||
		r.JSON()["status_url"] != "/v1/data-import/account-transfer-status/DEMO_ENERGY/EXT-1/" {
		t.Fatalf("async create: %d %s", r.Status, r.Body)
	}
	if st := p.status("EXT-1"); st["status"] != "IN_PROGRESS" {
		t.Fatalf("status: %v", st)
	}
	// Staging while in progress is refused.
	if r := p.As(p.token, http.MethodPost, stagePath, p.account("EXT-1")); r.Status != http.StatusBadRequest || r.JSON()["code"] != "account_import_in_progress" {
		t.Fatalf("stage in progress: %d %s", r.Status, r.Body)
	}
	p.StartWorker()
	// A second create waits on the same job.
	r = p.create("EXT-1", nil)
	if r.Status != http.StatusCreated {
		t.Fatalf("joined create: %d %s", r.Status, r.Body)
	}
	if n := p.count(`SELECT count(*) FROM import_attempts`); n != 1 {
		t.Fatalf("%d attempts", n)
	}
}
