package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// The operator side of issue 18: products load (the API's validation, all
// or nothing), supplier settings, and keys with the products scope.
func TestImportctlProductsAndSettings(t *testing.T) {
	st := testutil.NewStack(t)
	t.Setenv("DATABASE_URL", st.Config.DatabaseURL)

	mustCtl(t, "supplier", "create", "GB_DEMO", "--market", "gb", "--require-products")
	var sups []supplierJSON
	if err := json.Unmarshal([]byte(mustCtl(t, "supplier", "list", "--json")), &sups); err != nil {
		t.Fatal(err)
	}
	if len(sups) != 1 || sups[0].Market != "GB" || !sups[0].RequireProducts {
		t.Fatalf("settings not stored: %+v", sups)
	}
	if _, err := importctl(t, "supplier", "update", "GB_DEMO", "--market", "XX"); err == nil {
		t.Fatal("unknown market accepted")
	}
	out := mustCtl(t, "supplier", "update", "GB_DEMO", "--require-products=false", "--json")
	if !strings.Contains(out, `"require_products": false`) || !strings.Contains(out, `"market": "GB"`) {
		t.Fatalf("update: %s", out)
	}
	if _, err := importctl(t, "supplier", "update", "NOPE", "--market", "GB"); err == nil {
		t.Fatal("unknown supplier updated")
	}

	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"products": [{"code": "P", "full_name": "P", "display_name": "P", "available_from": "2024-01-01",
		"tariffs": [{"tariff_code": "T", "fuel": "GAS", "unit_rates": [{"rate_type": "S", "value": "1.00001", "valid_from": "2024-01-01"}]}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := importctl(t, "products", "load", bad); err == nil || !strings.Contains(err.Error(), "products.0.tariffs.0.unit_rates.0.value max_decimal_places") {
		t.Fatalf("invalid catalogue: %v %s", err, out)
	}
	demo, err := testutil.ReadRepoFile("deploy/local/demo_products.json")
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(t.TempDir(), "demo.json")
	if err := os.WriteFile(good, demo, 0o600); err != nil {
		t.Fatal(err)
	}
	if out := mustCtl(t, "products", "load", good); !strings.Contains(out, "11 products loaded (11 created, 0 updated)") {
		t.Fatalf("load: %s", out)
	}
	if out := mustCtl(t, "products", "load", good); !strings.Contains(out, "(0 created, 11 updated)") {
		t.Fatalf("reload: %s", out)
	}

	if _, err := importctl(t, "apikey", "create", "--org", "Ops", "--supplier", "GB_DEMO", "--scope", "admin"); err == nil {
		t.Fatal("unknown scope accepted")
	}
	mustCtl(t, "org", "create", "Ops")
	var key struct {
		APIKey string   `json:"api_key"`
		Scopes []string `json:"scopes"`
	}
	if err := json.Unmarshal([]byte(mustCtl(t, "apikey", "create", "--org", "Ops", "--supplier", "GB_DEMO", "--scope", "products", "--json")), &key); err != nil {
		t.Fatal(err)
	}
	if len(key.Scopes) != 1 || key.Scopes[0] != "products" {
		t.Fatalf("scopes: %+v", key)
	}
	resp := st.GraphQL(`mutation($k: String!) { obtainToken(input: {APIKey: $k}) { token } }`, map[string]any{"k": key.APIKey})
	var tok struct {
		Data struct {
			ObtainToken struct{ Token string } `json:"obtainToken"`
		} `json:"data"`
	}
	resp.Decode(&tok)
	r := st.As(tok.Data.ObtainToken.Token, http.MethodPost, "/v1/data-import/products/create-or-update/", string(demo))
	if r.Status != http.StatusCreated {
		t.Fatalf("scoped key: %d %s", r.Status, r.Body)
	}
}
