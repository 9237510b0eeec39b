package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/httpapi"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// TestOpenAPIContract drives every operation of the OpenAPI document once
// through the real API, so that each is validated (request and response)
// by the contract check every Stack request runs, and then asserts that no
// operation of the document went unexercised in this test process. Adding
// an operation to the document without calling it here fails this test; a
// route the document lacks fails TestOpenAPIDocumentsEveryRoute
// (pkg/httpapi) and, when called, the contract check itself.
func TestOpenAPIContract(t *testing.T) {
	c, err := testutil.LoadContract()
	if err != nil {
		t.Fatal(err)
	}
	if c.Doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", c.Doc.OpenAPI)
	}
	s := newPayStack(t, hookWorker(true))
	const ext = "EXT-C1"
	want := func(r testutil.Response, status int) testutil.Response {
		t.Helper()
		if r.Status != status {
			t.Fatalf("status %d, want %d: %.500s", r.Status, status, r.Body)
		}
		return r
	}
	post := func(path string, body any, status int) testutil.Response {
		t.Helper()
		return want(s.As(s.token, http.MethodPost, path, body), status)
	}
	get := func(path string, status int) testutil.Response {
		t.Helper()
		return want(s.As(s.token, http.MethodGet, path, nil), status)
	}
	sample := func(name string) string {
		t.Helper()
		b, err := testutil.ReadRepoFile("pkg/dataimport/testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return strings.ReplaceAll(string(b), `"EXT-0001"`, `"`+ext+`"`)
	}

	// POST /v1/graphql/ ran in newPayStack (Tenant); the account pipeline:
	post(validatePath, s.account(ext), http.StatusOK)
	post(stagePath, s.account(ext), http.StatusCreated)
	post(createPath, map[string]any{"external_account_number": ext, "import_supplier_code": "DEMO_ENERGY", "operations_team_name": "Migrations"}, http.StatusCreated)
	get("/v1/data-import/account-transfer-status/DEMO_ENERGY/"+ext+"/", http.StatusOK)
	s.stage("EXT-C2") // a second, pending account: the lists have a next page
	for _, list := range []string{"all", "pending", "imported"} {
		get("/v1/data-import/"+list+"-account-import-processes/DEMO_ENERGY/", http.StatusOK)
		get("/v1/data-import/"+list+"-account-import-processes/DEMO_ENERGY/?page_size=1", http.StatusOK)
	}
	if r := get("/v1/data-import/all-account-import-processes/DEMO_ENERGY/?page_size=1", http.StatusOK); !strings.Contains(r.Header.Get("Link"), `rel="next"`) {
		t.Errorf("no Link header on a first page: %v", r.Header)
	}
	// The event feed: a page, a bad cursor, a supplier the caller may not see.
	get("/v1/data-import/events/?limit=10&type=import_process.complete-v1&import_supplier=DEMO_ENERGY", http.StatusOK)
	get("/v1/data-import/events/?after=latest&wait=0s", http.StatusOK)
	get("/v1/data-import/events/?after=garbage", http.StatusBadRequest)
	get("/v1/data-import/events/?import_supplier=NOPE", http.StatusNotFound)
	// Failure records: a refused stage, then the list (each format), its
	// filters, the summary, and a supplier the caller may not see.
	bad := strings.Replace(s.account("EXT-CF"), `"EXT-CF"`, `"EXT-CF", "sales_channel": "CARRIER_PIGEON"`, 1)
	post(stagePath, bad, http.StatusBadRequest)
	get("/v1/data-import/failures/?import_supplier=DEMO_ENERGY", http.StatusOK)
	get("/v1/data-import/failures/?import_supplier=DEMO_ENERGY&code=invalid_choice&source=stage&resolved=false&limit=1&format=ndjson", http.StatusOK)
	get("/v1/data-import/failures/?import_supplier=DEMO_ENERGY&format=csv&since=2020-01-01T00:00:00Z", http.StatusOK)
	get("/v1/data-import/failures/?import_supplier=DEMO_ENERGY&limit=5000", http.StatusBadRequest)
	get("/v1/data-import/failures/?import_supplier=NOPE", http.StatusNotFound)
	get("/v1/data-import/failures/summary/?import_supplier=DEMO_ENERGY", http.StatusOK)
	get("/v1/data-import/failures/summary/?import_supplier=NOPE", http.StatusNotFound)
	// Reconciliation and the landed accounts (the created account above).
	get("/v1/data-import/reconciliation/?import_supplier=DEMO_ENERGY", http.StatusOK)
	get("/v1/data-import/reconciliation/?import_supplier=DEMO_ENERGY&since=garbage", http.StatusBadRequest)
	get("/v1/data-import/reconciliation/?import_supplier=NOPE", http.StatusNotFound)
	get("/v1/data-import/reconciliation/accounts/?import_supplier=DEMO_ENERGY&since=2020-01-01T00:00:00Z", http.StatusOK)

	// Post-import data.
	post("/v1/data-import/notes/create/", sample("notes_sample.json"), http.StatusCreated)
	post("/v1/data-import/transactions/create/?check_previously_added=true&force_add_to_current_statement=1", sample("transactions_sample.json"), http.StatusCreated)
	post("/v1/data-import/historical-statements/create/", sample("statements_sample.json"), http.StatusCreated)
	post(paymentPath, map[string]any{"import_supplier": "DEMO_ENERGY", "external_account_number": ext,
		"vendor": "STRIPE", "reference": "pm_card_visa", "type": "CARD"}, http.StatusCreated)

	// The product catalogue: any key validates and reads; writing needs
	// the products scope, which this key lacks.
	products := sample("../../../deploy/local/demo_products.json")
	post("/v1/data-import/validate-products/", products, http.StatusOK)
	post("/v1/data-import/products/create-or-update/", products, http.StatusForbidden)
	get("/v1/data-import/products/", http.StatusOK)
	get("/v1/data-import/products/DEMO-VAR-24-02/", http.StatusNotFound)

	// The asynchronous API: a v2 account scheduled an hour ahead, then
	// cancelled; the created account's timeline (with its post-import events).
	const ext2 = "EXT-C3"
	post(v2Accounts+"validate/", `{"payload": `+s.account(ext2)+`}`, http.StatusOK)
	post(v2Accounts, `{"payload": `+s.account(ext2)+`, "task_params": {"schedule_window_start": "`+ts(time.Now().Add(time.Hour))+`"}}`, http.StatusCreated)
	get(v2Accounts+"DEMO_ENERGY/"+ext2+"/", http.StatusOK)
	post(v2Accounts+"DEMO_ENERGY/"+ext2+"/cancel/", nil, http.StatusOK)
	get(v2Accounts+"DEMO_ENERGY/"+ext+"/events/", http.StatusOK)
	post(v2Accounts+"DEMO_ENERGY/"+ext+"/cancel/", nil, http.StatusConflict)

	// A bulk job that only stages (no worker here: it stays PROCESSING),
	// its status, the list, its results in both formats, its cancel.
	var line bytes.Buffer
	if err := json.Compact(&line, []byte(s.account("EXT-J1"))); err != nil {
		t.Fatal(err)
	}
	job := want(s.As(s.token, http.MethodPost, "/v1/data-import/jobs/?import_supplier=DEMO_ENERGY&create=false",
		line.String()+"\n", "Content-Type", "application/x-ndjson"), http.StatusAccepted)
	// Many accounts validated at once (NDJSON both ways): one valid, one not.
	va := want(s.As(s.token, http.MethodPost, "/v1/data-import/validate-accounts/",
		line.String()+"\n{}\n", "Content-Type", "application/x-ndjson"), http.StatusOK)
	if r := strings.Split(strings.TrimSpace(string(va.Body)), "\n"); len(r) != 2 || !strings.Contains(r[0], `"valid":true`) ||
		!strings.Contains(r[1], `"code":"account_failed_validation"`) {
		t.Errorf("validate-accounts: %s", va.Body)
	}
	jobURL, _ := job.JSON()["status_url"].(string)
	get(jobURL, http.StatusOK)
	get("/v1/data-import/jobs/", http.StatusOK)
	get(jobURL+"results/?outcome=all", http.StatusOK)
	get(jobURL+"results/?format=csv", http.StatusOK)
	post(jobURL+"retry/?code=product_not_found", nil, http.StatusAccepted) // nothing failed: {retried: 0}
	// Corrected lines for it: one not in the job (answered per line), then
	// refused once the job is cancelled.
	var other bytes.Buffer
	if err := json.Compact(&other, []byte(s.account("EXT-J9"))); err != nil {
		t.Fatal(err)
	}
	// A job whose window opens in an hour stays under way whatever the
	// worker does, so its cancel surely ends it before the second re-run.
	later := want(s.As(s.token, http.MethodPost, "/v1/data-import/jobs/?import_supplier=DEMO_ENERGY&operations_team_name=Migrations&schedule_window_start="+
		time.Now().Add(time.Hour).UTC().Format(time.RFC3339), line.String()+"\n", "Content-Type", "application/x-ndjson"), http.StatusAccepted)
	laterURL, _ := later.JSON()["status_url"].(string)
	want(s.As(s.token, http.MethodPost, laterURL+"lines/", other.String()+"\n", "Content-Type", "application/x-ndjson"), http.StatusAccepted)
	post(laterURL+"cancel/", nil, http.StatusOK)
	want(s.As(s.token, http.MethodPost, laterURL+"lines/", other.String()+"\n", "Content-Type", "application/x-ndjson"), http.StatusConflict)
	get("/v1/data-import/jobs/999999/", http.StatusNotFound)

	// Partner webhooks: register a local receiver, read, change, rotate, test.
	rcv := newHookReceiver(t)
	hook := post("/v1/data-import/webhooks/", map[string]any{"url": rcv.URL, "event_types": []string{"import_process.complete-v1"}}, http.StatusCreated)
	hookURL := fmt.Sprintf("/v1/data-import/webhooks/%d/", int64(hook.JSON()["id"].(float64)))
	get("/v1/data-import/webhooks/", http.StatusOK)
	get(hookURL, http.StatusOK)
	want(s.As(s.token, http.MethodPatch, hookURL, map[string]any{"description": "contract"}), http.StatusOK)
	post(hookURL+"rotate-secret/", nil, http.StatusOK)
	post(hookURL+"test/", nil, http.StatusOK)
	get(hookURL+"attempts/", http.StatusOK)
	post("/v1/data-import/webhooks/", map[string]any{"url": "ftp://example.com/"}, http.StatusBadRequest)

	// Probes, metrics, the document and its page: no credentials needed.
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/docs", "/docs/swagger-ui-bundle.js", "/docs/swagger-ui.css"} {
		want(s.Request(http.MethodGet, path, nil), http.StatusOK)
	}
	want(s.Request(http.MethodGet, "/docs/nothing.js", nil), http.StatusNotFound)
	// The root points at the documentation instead of a bare 404.
	if idx := want(s.Request(http.MethodGet, "/", nil), http.StatusOK).JSON(); idx["docs"] != "/docs" || idx["openapi"] != httpapi.OpenAPIPath {
		t.Errorf("GET / = %v, want links to /docs and the OpenAPI document", idx)
	}
	if r := want(s.Request(http.MethodGet, httpapi.OpenAPIPath, nil), http.StatusOK); !bytes.Equal(r.Body, httpapi.OpenAPIDocument()) {
		t.Error("GET /v1/data-import/openapi.json does not serve the embedded document")
	}

	cov := testutil.ContractCoverage()
	for _, op := range c.Operations() {
		if len(cov[op]) == 0 {
			t.Errorf("operation %s of the OpenAPI document was not exercised", op)
		}
	}
	var lines []string
	for _, op := range slices.Sorted(maps.Keys(cov)) {
		lines = append(lines, fmt.Sprintf("%-95s %v", op, slices.Sorted(maps.Keys(cov[op]))))
	}
	t.Logf("operations and statuses exercised so far in this process:\n%s", strings.Join(lines, "\n"))
}
