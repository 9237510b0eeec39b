package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// Re-running a job's failed creations by cause (CONTRACT §13): the fix is
// elsewhere (a product loaded), the retry puts exactly the lines failed for
// that cause back through the job, which is PROCESSING again and completes
// with exact counters; their failure records are resolved.

func retryURL(id int64, query string) string {
	return fmt.Sprintf("%s%d/retry/?%s", jobsURL, id, query)
}

// lateProduct is the demo catalogue's DEMO-VAR-24-02 under another code
// (and tariff codes): the product the lines name before it is loaded.
func lateProduct(t *testing.T) string {
	t.Helper()
	raw, err := testutil.ReadRepoFile("deploy/local/demo_products.json")
	if err != nil {
		t.Fatal(err)
	}
	var cat struct {
		Products []map[string]any `json:"products"`
	}
	if err := json.Unmarshal(raw, &cat); err != nil {
		t.Fatal(err)
	}
	for _, p := range cat.Products {
		if p["code"] != "DEMO-VAR-24-02" {
			continue
		}
		p["code"] = "LATE-VAR-24-02"
		for _, tf := range p["tariffs"].([]any) {
			tf.(map[string]any)["tariff_code"] = "LATE-" + tf.(map[string]any)["tariff_code"].(string)
		}
		b, _ := json.Marshal(map[string]any{"products": []any{p}})
		return string(b)
	}
	t.Fatal("no DEMO-VAR-24-02 in the demo catalogue")
	return ""
}

func TestJobRetryFailedCreationsByCode(t *testing.T) {
	p := newPipeline(t)
	ops := p.loadDemoCatalogue()
	// 30 lines name a product not loaded yet, 5 a tariff nobody has, 10 are
	// good. The supplier requires products only once the upload is in, so
	// the lines are valid when received and their creation refuses them.
	const late, good, tariff = `"product_code":"LATE-VAR-24-02"`, `"product_code":"DEMO-VAR-24-02"`, `"tariff_code":"NO-SUCH-TARIFF"`
	var body strings.Builder
	for i := range 45 {
		line := p.jobAccountLine(fmt.Sprintf("EXT-R%02d", i))
		if !strings.Contains(line, good) {
			t.Fatalf("sample account lacks %s", good)
		}
		switch {
		case i%3 != 2:
			line = strings.Replace(line, good, late, 1) // 30
		case i%9 == 2:
			line = strings.Replace(line, good, tariff, 1) // 5
		}
		body.WriteString(line + "\n")
	}
	id := acceptedJob(t, p.postJob(p.token, jobQuery, strings.NewReader(body.String()), false))
	on := true
	if _, err := p.DB.UpdateSupplierSettings(t.Context(), "DEMO_ENERGY", postgres.SupplierSettings{RequireProducts: &on}); err != nil {
		t.Fatal(err)
	}
	w := p.StartWorker()
	v := p.waitJob(p.token, id, time.Minute)
	checkCounters(t, v, map[string]int64{"received": 45, "created": 10, "failed": 35})
	byCode := map[string]int{}
	for _, l := range p.jobResults(p.token, id, "failed") {
		byCode[l.Errors[0].Code]++
	}
	if byCode["product_not_found"] != 30 || byCode["tariff_code_not_found"] != 5 {
		t.Fatalf("failed lines by code: %v", byCode)
	}

	// Nothing matches: 202 {retried: 0}, the job stays as it is.
	if r := p.As(p.token, http.MethodPost, retryURL(id, "code=no_such_code"), nil); r.Status != http.StatusAccepted || string(r.Body) != `{"retried":0}` {
		t.Fatalf("retry matching nothing: %d %s", r.Status, r.Body)
	}
	if v := p.job(p.token, id); v.State != "COMPLETED" {
		t.Fatalf("after a retry of nothing: %s", v.State)
	}

	// The product is loaded; the worker is stopped so the job is seen
	// PROCESSING again before anything runs.
	w.Shutdown()
	if r := p.As(ops.Token, http.MethodPost, "/v1/data-import/products/create-or-update/", lateProduct(t)); r.Status >= 300 {
		t.Fatalf("late product: %d %s", r.Status, r.Body)
	}
	key := []string{"Idempotency-Key", "retry-products-1"}
	r := p.As(p.token, http.MethodPost, retryURL(id, "code=product_not_found"), nil, key...)
	if r.Status != http.StatusAccepted || string(r.Body) != `{"retried":30}` {
		t.Fatalf("retry product_not_found: %d %s", r.Status, r.Body)
	}
	v = p.job(p.token, id)
	if v.State != "PROCESSING" {
		t.Fatalf("after the retry: %s", v.State)
	}
	checkCounters(t, v, map[string]int64{"received": 45, "created": 10, "failed": 5, "staged": 30})
	// The same key replays the answer and retries nothing again.
	again := p.As(p.token, http.MethodPost, retryURL(id, "code=product_not_found"), nil, key...)
	if again.Status != http.StatusAccepted || string(again.Body) != string(r.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s %v", again.Status, again.Body, again.Header)
	}
	checkCounters(t, p.job(p.token, id), map[string]int64{"received": 45, "created": 10, "failed": 5, "staged": 30})

	p.StartWorker()
	v = p.waitJob(p.token, id, time.Minute)
	if v.State != "COMPLETED" {
		t.Fatalf("retried job ended %s", v.State)
	}
	checkCounters(t, v, map[string]int64{"received": 45, "created": 40, "failed": 5})
	failed := p.jobResults(p.token, id, "failed")
	for _, l := range failed {
		if l.Errors[0].Code != "tariff_code_not_found" {
			t.Errorf("still failed: %+v", l)
		}
	}
	if len(failed) != 5 {
		t.Errorf("%d lines still failed, want the 5 with an unknown tariff", len(failed))
	}
	// Each account exactly once; the 30 by a second attempt.
	for q, want := range map[string]int64{
		`SELECT count(*) FROM accounts`:                                                    40,
		`SELECT count(DISTINCT import_process_id) FROM accounts`:                           40,
		`SELECT count(*) FROM import_attempts WHERE outcome = 'COMPLETED'`:                 40,
		`SELECT count(*) FROM import_attempts WHERE outcome = 'COMPLETED' AND attempt = 2`: 30,
		`SELECT count(*) FROM import_processes WHERE status = 'IN_PROGRESS'`:               0,
	} {
		if got := p.count(q); got != want {
			t.Errorf("%s = %d, want %d", q, got, want)
		}
	}
	// Each time the job ended it said so, with the counters it ended with.
	var ends []string
	if err := p.DB.Gorm().Raw(`SELECT data->'counters'->>'created' || '/' || (data->'counters'->>'failed') FROM import_process_events
		WHERE event = 'JOB_COMPLETED' AND (data->>'job_id')::bigint = ? ORDER BY id`, id).Scan(&ends).Error; err != nil {
		t.Fatal(err)
	}
	if strings.Join(ends, " ") != "10/35 40/5" {
		t.Errorf("job ends (created/failed): %v, want 10/35 then 40/5", ends)
	}
	// The retried accounts' failure records are resolved, the others not.
	fs, _ := p.failures(p.token, fmt.Sprintf("import_supplier=DEMO_ENERGY&job=%d&code=product_not_found&resolved=true&limit=1000", id))
	if len(fs) != 30 {
		t.Errorf("%d product_not_found records resolved, want 30", len(fs))
	}
	if fs, _ := p.failures(p.token, "import_supplier=DEMO_ENERGY&resolved=false&limit=1000"); len(fs) != 5 || fs[0].Errors[0].Code != "tariff_code_not_found" {
		t.Errorf("unresolved records: %+v", fs)
	}

	// A cancelled job, and one still receiving: 409 in the envelope.
	w2 := p.postJob(p.token, jobQuery+"&schedule_window_start="+time.Now().Add(time.Hour).UTC().Format(time.RFC3339), strings.NewReader(p.jobBody(100, 2)), false)
	waiting := acceptedJob(t, w2)
	if r := p.As(p.token, http.MethodPost, fmt.Sprintf("%s%d/cancel/", jobsURL, waiting), nil); r.Status != http.StatusOK {
		t.Fatalf("cancel: %d %s", r.Status, r.Body)
	}
	p.stallUpload(t, p.jobAccountLine("EXT-STALL")+"\n")
	var receiving int64
	deadline := time.Now().Add(10 * time.Second)
	for receiving == 0 && time.Now().Before(deadline) {
		receiving = p.count(`SELECT coalesce(max(id), 0) FROM import_jobs WHERE state = 'RECEIVING'`)
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range []struct {
		id    int64
		state string
	}{{waiting, "CANCELLED"}, {receiving, "RECEIVING"}} {
		r := p.As(p.token, http.MethodPost, retryURL(c.id, ""), nil)
		if r.Status != http.StatusConflict || r.JSON()["code"] != dataimport.CodeJobNotRetryable || !strings.Contains(r.JSON()["detail"].(string), c.state) {
			t.Errorf("retry of a %s job: %d %s", c.state, r.Status, r.Body)
		}
	}
	// Another organisation's job is not found; a bad parameter is a 400.
	p.Supplier("OTHER_ENERGY")
	other := p.Tenant("Other Partner", "OTHER_ENERGY")
	if r := p.As(other.Token, http.MethodPost, retryURL(id, ""), nil); r.Status != http.StatusNotFound {
		t.Errorf("another organisation's retry: %d %s", r.Status, r.Body)
	}
	if r := p.As(p.token, http.MethodPost, retryURL(id, "cause=x"), nil); r.Status != http.StatusBadRequest || r.JSON()["code"] != dataimport.CodeInvalidPayload {
		t.Errorf("unknown parameter: %d %s", r.Status, r.Body)
	}
}

// The console's retry (RetryFailedCreations) of accounts whose creation
// failed outside any job: each gets a scheduled attempt from its staged
// payload, which the worker's reconciler starts (the store has no queue)
// under the cap; accounts failed for another cause stay failed, and the
// retried ones' failure records are resolved by their creation.
func TestRetryFailedCreationsOutsideJobs(t *testing.T) {
	p := newPipeline(t)
	ops := p.loadDemoCatalogue()
	const good = `"product_code": "DEMO-VAR-24-02",`
	edits := map[string]string{"EXT-L1": `"product_code": "LATE-VAR-24-02",`, "EXT-L2": `"product_code": "LATE-VAR-24-02",`,
		"EXT-L3": `"product_code": "LATE-VAR-24-02",`, "EXT-T1": `"tariff_code": "NO-SUCH-TARIFF",`}
	for ext, edit := range edits {
		body := p.account(ext)
		if !strings.Contains(body, good) {
			t.Fatalf("sample account lacks %s", good)
		}
		if r := p.As(p.token, http.MethodPost, stagePath, strings.Replace(body, good, edit, 1)); r.Status >= 300 {
			t.Fatalf("stage %s: %d %s", ext, r.Status, r.Body)
		}
	}
	on := true
	if _, err := p.DB.UpdateSupplierSettings(t.Context(), "DEMO_ENERGY", postgres.SupplierSettings{RequireProducts: &on}); err != nil {
		t.Fatal(err)
	}
	p.StartWorker()
	for ext := range edits {
		if r := p.create(ext, nil); r.Status != http.StatusBadRequest {
			t.Fatalf("create %s: %d %s", ext, r.Status, r.Body)
		}
	}
	if fs, _ := p.failures(p.token, "import_supplier=DEMO_ENERGY&source=create&resolved=false"); len(fs) != 4 {
		t.Fatalf("%d creation failures, want 4: %+v", len(fs), fs)
	}
	if r := p.As(ops.Token, http.MethodPost, "/v1/data-import/products/create-or-update/", lateProduct(t)); r.Status >= 300 {
		t.Fatalf("late product: %d %s", r.Status, r.Body)
	}
	sup, err := p.DB.SupplierByCode(t.Context(), "DEMO_ENERGY")
	if err != nil {
		t.Fatal(err)
	}
	// One at a time: the retried attempts wait for their slot like any v2 account.
	if err := p.DB.SetConcurrencyLimit(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	n, err := p.DB.RetryFailedCreations(postgres.WithActor(t.Context(), "operator:alice"), postgres.FailureQuery{SupplierID: sup.ID, Code: "product_not_found"})
	if err != nil || n != 3 {
		t.Fatalf("retry: %d %v", n, err)
	}
	deadline := time.Now().Add(time.Minute)
	for _, ext := range []string{"EXT-L1", "EXT-L2", "EXT-L3"} {
		for p.status(ext)["status"] != "COMPLETED" {
			if time.Now().After(deadline) {
				t.Fatalf("%s still %v after the retry", ext, p.status(ext))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if s := p.status("EXT-T1"); s["status"] != "UNKNOWN" {
		t.Errorf("EXT-T1 (another cause): %v", s)
	}
	if n := p.count(`SELECT count(*) FROM accounts`); n != 3 {
		t.Errorf("%d accounts, want 3", n)
	}
	if fs, _ := p.failures(p.token, "import_supplier=DEMO_ENERGY&source=create&resolved=true"); len(fs) != 3 {
		t.Errorf("%d creation failures resolved, want 3", len(fs))
	}
	if n := p.count(`SELECT count(*) FROM audit_log WHERE actor = 'operator:alice' AND action = ?`, postgres.AuditFailuresRetry); n != 1 {
		t.Errorf("%d audit rows of the retry", n)
	}
}

// loadDemoCatalogue loads make run's demo product catalogue for
// DEMO_ENERGY as its catalogue operator would, and returns that operator.
func (p *pipeline) loadDemoCatalogue() testutil.Tenant {
	p.TB.Helper()
	ops := p.ScopedTenant("Catalogue Ops", []string{dataimport.ScopeProducts}, "DEMO_ENERGY")
	products, err := testutil.ReadRepoFile("deploy/local/demo_products.json")
	if err != nil {
		p.TB.Fatal(err)
	}
	if r := p.As(ops.Token, http.MethodPost, "/v1/data-import/products/create-or-update/", string(products)); r.Status >= 300 {
		p.TB.Fatalf("products: %d %s", r.Status, r.Body)
	}
	return ops
}
