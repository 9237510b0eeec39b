package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// Every post-import endpoint resolves its account the same way (CONTRACT
// §7): unknown, only staged, or another tenant's → the same 404; supplier
// not Ongoing → 400.
func TestPostImportAccountResolution(t *testing.T) {
	p := newPostImport(t)
	p.imported("EXT-DONE")
	if r := p.post(stagePath, account(t, "EXT-STAGED")); r.Status != http.StatusCreated {
		t.Fatalf("stage: %d %s", r.Status, r.Body)
	}
	p.Supplier("OTHER")
	other := p.Tenant("Other Partner", "OTHER")
	ctx := context.Background()

	endpoints := map[string]func(external string) string{
		notesPath: func(e string) string { return body(e, "notes", `{"body":"hello"}`) },
		transactionsPath: func(e string) string {
			return body(e, "transactions", `{"transaction_id":"R1","transaction_date":"2025-06-10","amount":1,"type":"CHARGE","reason":"IMPORTED_CHARGE"}`)
		},
		statementsPath: func(e string) string {
			return body(e, "statements", `{"statement_id":"S1","bill_period_from_date":"2025-01-01","bill_period_to_date":"2025-01-31"}`)
		},
	}
	for path, mk := range endpoints {
		t.Run(path, func(t *testing.T) {
			unknown := p.post(path, mk("EXT-NOPE"))
			assertEnvelope(t, unknown, http.StatusNotFound, "not_found")
			for name, r := range map[string]testutil.Response{
				"staged only":      p.post(path, mk("EXT-STAGED")),
				"other tenant":     p.As(other.Token, http.MethodPost, path, mk("EXT-DONE")),
				"unknown supplier": p.post(path, `{"import_supplier":"NOPE"`+mk("EXT-DONE")[len(`{"import_supplier":"DEMO_ENERGY"`):]),
			} {
				if r.Status != http.StatusNotFound || string(r.Body) != string(unknown.Body) {
					t.Errorf("%s: %d %s, want the body of an unknown account %s", name, r.Status, r.Body, unknown.Body)
				}
			}
			if r := p.Request(http.MethodPost, path, mk("EXT-DONE")); r.Status != http.StatusUnauthorized {
				t.Errorf("no token: %d", r.Status)
			}
			for _, status := range []dataimport.SupplierStatus{dataimport.SupplierPaused, dataimport.SupplierComplete} {
				if err := p.DB.SetSupplierStatus(ctx, "DEMO_ENERGY", status); err != nil {
					t.Fatal(err)
				}
				assertEnvelope(t, p.post(path, mk("EXT-DONE")), http.StatusBadRequest, "import_supplier_migration_not_ongoing")
			}
			if err := p.DB.SetSupplierStatus(ctx, "DEMO_ENERGY", dataimport.SupplierOngoing); err != nil {
				t.Fatal(err)
			}
			if r := p.post(path, mk("EXT-DONE")); r.Status != http.StatusCreated {
				t.Errorf("Ongoing again: %d %s", r.Status, r.Body)
			}
		})
	}
}
