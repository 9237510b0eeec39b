package httpapi_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/testutil"
)

const (
	stagePath    = "/v1/data-import/account-import-process/create-or-update/"
	validatePath = "/v1/data-import/validate-account/"
)

func account(t *testing.T, external string) string { return accountB(t, external) }

func accountB(tb testing.TB, external string) string {
	return strings.Replace(readFixture(tb), `"EXT-0001"`, `"`+external+`"`, 1)
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestValidateNormalises(t *testing.T) {
	st := testutil.NewStack(t)
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	r := st.As(ten.Token, http.MethodPost, validatePath, account(t, "EXT-V"))
	if r.Status != http.StatusOK {
		t.Fatalf("validate: %d %s", r.Status, r.Body)
	}
	var got struct {
		ExternalAccountNumber string `json:"external_account_number"`
		Customers             []struct {
			Mobile, Landline string
		}
		TransferBalance any `json:"transfer_balance"`
	}
	r.Decode(&got)
	if got.ExternalAccountNumber != "EXT-V" || got.Customers[0].Mobile != "+447400123456" || got.Customers[0].Landline != "+442079460018" {
		t.Fatalf("not normalised: %s", r.Body)
	}
	// Nothing was stored by validate.
	if r := st.As(ten.Token, http.MethodGet, statusPath("DEMO_ENERGY", "EXT-V"), nil); r.Status != http.StatusNotFound {
		t.Fatalf("validate stored something: %d", r.Status)
	}
	// Several errors at once, with nested paths.
	bad := strings.Replace(account(t, "EXT-V"), `"07400 123456"`, `"12"`, 1)
	bad = strings.Replace(bad, `"sales_channel": "PRICE_COMPARISON"`, `"sales_channel": "CARRIER_PIGEON"`, 1)
	r = st.As(ten.Token, http.MethodPost, validatePath, bad)
	assertEnvelope(t, r, http.StatusBadRequest, "account_failed_validation")
	errs := fieldErrors(t, r)
	if errs["customers.0.mobile"] != "invalid_phone_number" || errs["sales_channel"] != "invalid_choice" {
		t.Fatalf("errors: %v", errs)
	}
}

func TestStageLifecycle(t *testing.T) {
	st := testutil.NewStack(t)
	st.Supplier("DEMO_ENERGY")
	st.Supplier("OTHER")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	ctx := context.Background()

	r := st.As(ten.Token, http.MethodPost, stagePath, account(t, "EXT-1"))
	if r.Status != http.StatusCreated {
		t.Fatalf("first stage: %d %s", r.Status, r.Body)
	}
	if b := r.JSON(); b["import_supplier"] != "DEMO_ENERGY" || b["external_account_number"] != "EXT-1" || len(b) != 2 {
		t.Fatalf("stage body: %s", r.Body)
	}
	restaged := strings.Replace(account(t, "EXT-1"), `"Alice"`, `"Alicia"`, 1)
	if r := st.As(ten.Token, http.MethodPost, stagePath, restaged); r.Status != http.StatusOK {
		t.Fatalf("restage: %d %s", r.Status, r.Body)
	}
	sup, _ := st.DB.SupplierByCode(ctx, "DEMO_ENERGY")
	p, err := st.DB.Process(ctx, sup.ID, "EXT-1")
	if err != nil {
		t.Fatal(err)
	}
	versions, err := st.DB.StagedVersions(ctx, p.ID)
	if err != nil || len(versions) != 2 {
		t.Fatalf("history: %d versions, %v", len(versions), err)
	}
	if !strings.Contains(string(versions[0]), `"Alice"`) || !strings.Contains(string(versions[1]), `"Alicia"`) {
		t.Fatal("history lost a version")
	}

	// Status and lists for a pending account.
	r = st.As(ten.Token, http.MethodGet, statusPath("DEMO_ENERGY", "EXT-1"), nil)
	if b := r.JSON(); r.Status != http.StatusOK || b["status"] != "UNKNOWN" || b["platform_account_number"] != "" || b["account_created_at"] != nil {
		t.Fatalf("status: %d %s", r.Status, r.Body)
	}
	for _, list := range []string{"all", "pending"} {
		r = st.As(ten.Token, http.MethodGet, "/v1/data-import/"+list+"-account-import-processes/DEMO_ENERGY/", nil)
		var items []map[string]any
		r.Decode(&items)
		if len(items) != 1 || items[0]["external_account_number"] != "EXT-1" || items[0]["platform_account_number"] != nil || items[0]["account_created_at"] != nil {
			t.Fatalf("%s list: %s", list, r.Body)
		}
	}
	if r := st.As(ten.Token, http.MethodGet, "/v1/data-import/imported-account-import-processes/DEMO_ENERGY/", nil); string(r.Body) != "[]" {
		t.Fatalf("imported list: %s", r.Body)
	}

	cases := []struct {
		name  string
		setup func()
		body  string
		code  string
	}{
		{"invalid payload", nil, strings.Replace(account(t, "EXT-2"), `"SW1A 2AA"`, `""`, 1), "account_failed_validation"},
		{"not granted supplier", nil, strings.Replace(account(t, "EXT-2"), `"DEMO_ENERGY"`, `"OTHER"`, 1), "import_supplier_not_found"},
		{"unknown supplier", nil, strings.Replace(account(t, "EXT-2"), `"DEMO_ENERGY"`, `"NOPE"`, 1), "import_supplier_not_found"},
		{"skipped", func() { must(t, st.DB.MarkSkipped(ctx, "DEMO_ENERGY", "EXT-SKIP")) }, account(t, "EXT-SKIP"), "account_marked_skipped"},
		{"in progress", func() { setProcess(t, st, sup.ID, "EXT-1", "IN_PROGRESS", "") }, account(t, "EXT-1"), "account_import_in_progress"},
		{"paused", func() { must(t, st.DB.SetSupplierStatus(ctx, "DEMO_ENERGY", dataimport.SupplierPaused)) }, account(t, "EXT-3"), "import_supplier_migration_not_ongoing"},
		{"complete", func() { must(t, st.DB.SetSupplierStatus(ctx, "DEMO_ENERGY", dataimport.SupplierComplete)) }, account(t, "EXT-3"), "import_supplier_migration_not_ongoing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
			}
			r := st.As(ten.Token, http.MethodPost, stagePath, tc.body)
			assertEnvelope(t, r, http.StatusBadRequest, tc.code)
		})
	}
	must(t, st.DB.SetSupplierStatus(ctx, "DEMO_ENERGY", dataimport.SupplierOngoing))

	// Already imported: 400 with both numbers; status and lists show it.
	setProcess(t, st, sup.ID, "EXT-1", "COMPLETED", "A-0000BEEF")
	r = st.As(ten.Token, http.MethodPost, stagePath, account(t, "EXT-1"))
	assertEnvelope(t, r, http.StatusBadRequest, "account_already_imported")
	if b := r.JSON(); b["external_account_number"] != "EXT-1" || b["platform_account_number"] != "A-0000BEEF" {
		t.Fatalf("already imported body: %s", r.Body)
	}
	r = st.As(ten.Token, http.MethodGet, statusPath("DEMO_ENERGY", "EXT-1"), nil)
	if b := r.JSON(); b["status"] != "COMPLETED" || b["platform_account_number"] != "A-0000BEEF" || b["account_created_at"] == nil {
		t.Fatalf("status after import: %s", r.Body)
	}
	r = st.As(ten.Token, http.MethodGet, "/v1/data-import/imported-account-import-processes/DEMO_ENERGY/", nil)
	var items []map[string]any
	r.Decode(&items)
	if len(items) != 1 || items[0]["platform_account_number"] != "A-0000BEEF" {
		t.Fatalf("imported list: %s", r.Body)
	}
	if r := st.As(ten.Token, http.MethodGet, "/v1/data-import/pending-account-import-processes/DEMO_ENERGY/", nil); string(r.Body) != "[]" {
		t.Fatalf("pending list after import: %s", r.Body)
	}
}

func TestListsPaginateAndIsolate(t *testing.T) {
	st := testutil.NewStack(t)
	st.Supplier("DEMO_ENERGY")
	st.Supplier("OTHER")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	st.Tenant("Other Partner", "OTHER")
	sup, _ := st.DB.SupplierByCode(context.Background(), "DEMO_ENERGY")
	bulkStage(t, st, sup.ID, 25)

	var all []string
	next := "/v1/data-import/all-account-import-processes/DEMO_ENERGY/?page_size=10"
	for pages := 0; next != ""; pages++ {
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		r := st.As(ten.Token, http.MethodGet, next, nil)
		var items []map[string]any
		r.Decode(&items)
		for _, it := range items {
			all = append(all, it["external_account_number"].(string))
		}
		next = ""
		if l := r.Header.Get("Link"); l != "" {
			next = strings.TrimSuffix(strings.TrimPrefix(l, "<"), `>; rel="next"`)
		}
	}
	if len(all) != 25 || all[0] != "EXT-000000" || all[24] != "EXT-000024" {
		t.Fatalf("paged list: %d items %v", len(all), all)
	}
	for i := 1; i < len(all); i++ {
		if all[i-1] >= all[i] {
			t.Fatalf("not ordered at %d: %s >= %s", i, all[i-1], all[i])
		}
	}
	assertEnvelope(t, st.As(ten.Token, http.MethodGet, "/v1/data-import/all-account-import-processes/DEMO_ENERGY/?page_size=0", nil), http.StatusBadRequest, "invalid_payload")
	assertEnvelope(t, st.As(ten.Token, http.MethodGet, "/v1/data-import/all-account-import-processes/DEMO_ENERGY/?page_size=5&cursor=***", nil), http.StatusBadRequest, "invalid_payload")

	// Another tenant's supplier looks like one that does not exist.
	foreign := st.As(ten.Token, http.MethodGet, "/v1/data-import/all-account-import-processes/OTHER/", nil)
	missing := st.As(ten.Token, http.MethodGet, "/v1/data-import/all-account-import-processes/NOPE/", nil)
	assertEnvelope(t, foreign, http.StatusNotFound, "not_found")
	if string(foreign.Body) != string(missing.Body) {
		t.Fatalf("foreign %s vs missing %s", foreign.Body, missing.Body)
	}
}

// bulkStage inserts n staged processes with one statement (fixture set-up,
// not the path under test).
func bulkStage(tb testing.TB, st *testutil.Stack, supplierID int64, n int) {
	tb.Helper()
	err := st.DB.Gorm().Exec(`
		WITH p AS (
			INSERT INTO import_processes (supplier_id, external_account_number, staged_version)
			SELECT ?, 'EXT-' || lpad(g::text, 6, '0'), 1 FROM generate_series(0, ? - 1) g
			RETURNING id)
		INSERT INTO import_process_versions (process_id, version, payload) SELECT id, 1, '{}'::jsonb FROM p`, supplierID, n).Error
	if err != nil {
		tb.Fatal(err)
	}
}

// setProcess forces a process state that later issues' pipeline produces.
func setProcess(t *testing.T, st *testutil.Stack, supplierID int64, external, status, platform string) {
	t.Helper()
	db := st.DB.Gorm()
	if platform != "" {
		var pid int64
		must(t, db.Raw(`SELECT id FROM import_processes WHERE supplier_id = ? AND external_account_number = ?`, supplierID, external).Scan(&pid).Error)
		must(t, db.Exec(`INSERT INTO accounts (platform_account_number, supplier_id, import_process_id, external_account_number, account_type)
			VALUES (?, ?, ?, ?, 'DOMESTIC')`, platform, supplierID, pid, external).Error)
		must(t, db.Exec(`UPDATE import_processes SET status = ?, v2_status = `+v2StatusOf+`, platform_account_number = ?, account_created_at = now()
			WHERE id = ?`, status, status, platform, pid).Error)
		return
	}
	must(t, db.Exec(`UPDATE import_processes SET status = ?, v2_status = `+v2StatusOf+`, scheduled = ? = 'IN_PROGRESS'
		WHERE supplier_id = ? AND external_account_number = ?`, status, status, status, supplierID, external).Error)
}

// v2StatusOf is the v2 status a process set to a v1 status has (CONTRACT §8;
// the import_processes_v1_v2_status_check holds them together).
const v2StatusOf = `CASE ?::text WHEN 'COMPLETED' THEN 'PROCESSED' WHEN 'IN_PROGRESS' THEN 'IN_PROGRESS' ELSE 'PENDING' END`

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
