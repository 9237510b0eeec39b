package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// importctl runs the CLI in-process against DATABASE_URL and returns stdout.
func importctl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	root := newRoot()
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), err
}

func mustCtl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := importctl(t, args...)
	if err != nil {
		t.Fatalf("importctl %s: %v (%s)", strings.Join(args, " "), err, out)
	}
	return out
}

func TestImportctlEndToEnd(t *testing.T) {
	st := testutil.NewStack(t)
	t.Setenv("DATABASE_URL", st.Config.DatabaseURL)

	mustCtl(t, "migrate")
	mustCtl(t, "migrate") // idempotent
	mustCtl(t, "supplier", "create", "DEMO_ENERGY", "--root", "/demo/", "--welcome-email", "--phone-region", "gb")
	if _, err := importctl(t, "supplier", "create", "DEMO_ENERGY"); err == nil {
		t.Fatal("duplicate supplier accepted")
	}
	if _, err := importctl(t, "supplier", "create", "bad code!"); err == nil {
		t.Fatal("invalid supplier code accepted")
	}
	var sups []map[string]any
	if err := json.Unmarshal([]byte(mustCtl(t, "supplier", "list", "--json")), &sups); err != nil {
		t.Fatal(err)
	}
	if len(sups) != 1 || sups[0]["code"] != "DEMO_ENERGY" || sups[0]["document_root"] != "demo" ||
		sups[0]["welcome_email"] != true || sups[0]["phone_region"] != "GB" || sups[0]["status"] != "Ongoing" {
		t.Fatalf("supplier list: %v", sups)
	}
	if out := mustCtl(t, "supplier", "list"); !strings.Contains(out, "DEMO_ENERGY") || !strings.Contains(out, "CODE") {
		t.Fatalf("human list: %q", out)
	}

	mustCtl(t, "team", "create", "Migrations")
	mustCtl(t, "org", "create", "Demo Partner")
	if _, err := importctl(t, "apikey", "create", "--org", "Nobody", "--supplier", "DEMO_ENERGY"); err == nil {
		t.Fatal("key for unknown org accepted")
	}
	if _, err := importctl(t, "apikey", "create", "--org", "Demo Partner", "--supplier", "NOPE"); err == nil {
		t.Fatal("key for unknown supplier accepted")
	}
	var key struct {
		APIKey string `json:"api_key"`
		Prefix string `json:"prefix"`
	}
	if err := json.Unmarshal([]byte(mustCtl(t, "apikey", "create", "--org", "Demo Partner", "--supplier", "DEMO_ENERGY", "--json")), &key); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key.APIKey, key.Prefix+"_") {
		t.Fatalf("key %q does not start with its prefix %q", key.APIKey, key.Prefix)
	}

	// The printed key works against the API.
	r := st.GraphQL(`mutation($k: String!) { obtainToken(input: {APIKey: $k}) { token } }`, map[string]any{"k": key.APIKey})
	var tok struct {
		Data struct {
			ObtainToken struct{ Token string } `json:"obtainToken"`
		}
	}
	r.Decode(&tok)
	if tok.Data.ObtainToken.Token == "" {
		t.Fatalf("printed key does not work: %s", r.Body)
	}

	// limit set / show / off
	mustCtl(t, "limit", "set", "5")
	var lim map[string]any
	_ = json.Unmarshal([]byte(mustCtl(t, "limit", "show", "--json")), &lim)
	if lim["enabled"] != true || lim["limit"] != float64(5) {
		t.Fatalf("limit show: %v", lim)
	}
	if n, on, _ := st.DB.ConcurrencyLimit(context.Background()); !on || n != 5 {
		t.Fatalf("limit in db: %d %v", n, on)
	}
	if _, err := importctl(t, "limit", "set", "0"); err == nil {
		t.Fatal("limit 0 accepted")
	}
	mustCtl(t, "limit", "off")
	if out := mustCtl(t, "limit", "show"); !strings.Contains(out, "off") {
		t.Fatalf("limit show after off: %q", out)
	}

	// account skip: a skipped account cannot be staged.
	mustCtl(t, "account", "skip", "DEMO_ENERGY", "EXT-SKIP")
	stage := func(external string) testutilResponse {
		return st.As(tok.Data.ObtainToken.Token, http.MethodPost, "/v1/data-import/account-import-process/create-or-update/",
			strings.Replace(validAccount(t), `"EXT-0001"`, `"`+external+`"`, 1))
	}
	if r := stage("EXT-SKIP"); r.Status != http.StatusBadRequest || r.JSON()["code"] != "account_marked_skipped" {
		t.Fatalf("stage skipped: %d %s", r.Status, r.Body)
	}

	// set-status reaches the API (another process) through Postgres NOTIFY,
	// within milliseconds.
	// Until the pause arrives a staging is still accepted, so each try stages
	// an account of its own and EXT-1 stays unstaged for the resume check.
	mustCtl(t, "supplier", "set-status", "DEMO_ENERGY", "Paused")
	tries := 0
	if r := soon(func() testutilResponse { tries++; return stage(fmt.Sprintf("EXT-PAUSE-%d", tries)) }, func(r testutilResponse) bool {
		return r.Status == http.StatusBadRequest && r.JSON()["code"] == "import_supplier_migration_not_ongoing"
	}); r.Status != http.StatusBadRequest || r.JSON()["code"] != "import_supplier_migration_not_ongoing" {
		t.Fatalf("stage on paused supplier: %d %s", r.Status, r.Body)
	}
	mustCtl(t, "supplier", "set-status", "DEMO_ENERGY", "Ongoing")
	if r := soon(func() testutilResponse { return stage("EXT-1") }, func(r testutilResponse) bool {
		return r.Status == http.StatusCreated
	}); r.Status != http.StatusCreated {
		t.Fatalf("stage after resume: %d %s", r.Status, r.Body)
	}
	if _, err := importctl(t, "supplier", "set-status", "DEMO_ENERGY", "Sleeping"); err == nil {
		t.Fatal("bad status accepted")
	}
	if _, err := importctl(t, "supplier", "set-status", "NOPE", "Paused"); err == nil {
		t.Fatal("unknown supplier accepted")
	}

	// revoke ends the key's tokens.
	mustCtl(t, "apikey", "revoke", key.Prefix)
	if r := soon(func() testutilResponse {
		return st.As(tok.Data.ObtainToken.Token, http.MethodGet, "/v1/data-import/all-account-import-processes/DEMO_ENERGY/", nil)
	}, func(r testutilResponse) bool { return r.Status == http.StatusUnauthorized }); r.Status != http.StatusUnauthorized {
		t.Fatalf("revoked key's token: %d", r.Status)
	}
	if _, err := importctl(t, "apikey", "revoke", "dik_nothere"); err == nil {
		t.Fatal("revoking an unknown prefix succeeded")
	}
}

type testutilResponse = testutil.Response

// soon repeats do until ok holds or two seconds pass, and returns the last
// response: operator changes reach API processes asynchronously (NOTIFY).
func soon(do func() testutilResponse, ok func(testutilResponse) bool) testutilResponse {
	deadline := time.Now().Add(2 * time.Second)
	for {
		r := do()
		if ok(r) || time.Now().After(deadline) {
			return r
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func validAccount(t *testing.T) string {
	t.Helper()
	b, err := testutil.ReadRepoFile("pkg/dataimport/testdata/account_valid.json")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
