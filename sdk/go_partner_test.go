package sdk_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/gridshift/dataimport/pkg/testutil"
	"github.com/gridshift/dataimport/pkg/webhook"
)

const sdkModule = "github.com/gridshift/dataimport/sdk/go"

// moduleProxy writes sdk/go as a module version into a file-system
// GOPROXY, as a tag sdk/go/vX.Y.Z published on the repository would be
// served, and returns the proxy directory and the version. The version is
// a pseudo-version naming the content, so the shared module cache never
// serves an older build of the SDK under it.
func moduleProxy(t *testing.T) (string, string) {
	t.Helper()
	root := repoRoot(t)
	src := filepath.Join(root, "sdk/go")
	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	// The content hash: every file the module zip will hold.
	h := sha256.New()
	err = filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil {
			h.Write([]byte(p))
			h.Write(b)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	version := "v0.0.0-20260101000000-" + hex.EncodeToString(h.Sum(nil))[:12]
	proxy := t.TempDir()
	dir := filepath.Join(proxy, sdkModule, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	zf, err := os.Create(filepath.Join(dir, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	if err := modzip.CreateFromDir(zf, module.Version{Path: sdkModule, Version: version}, src); err != nil {
		t.Fatal(err)
	}
	if err := zf.Close(); err != nil {
		t.Fatal(err)
	}
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(version+".mod", gomod)
	write(version+".info", []byte(`{"Version":"`+version+`","Time":"2026-01-01T00:00:00Z"}`))
	write("list", []byte(version+"\n"))
	return proxy, version
}

// webhookDelivery is a delivery as the API's sender signs it during a
// secret's rotation (two signatures, the new secret's first), captured by a
// receiver: {"headers": {...}, "body": "..."} in a file, and the old secret,
// whose signature is the second: a verifier must try every one.
func webhookDelivery(t *testing.T) (string, string) {
	t.Helper()
	secret, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := webhook.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got, _ = json.Marshal(map[string]any{"headers": map[string]string{
			"webhook-id":        r.Header.Get("webhook-id"),
			"webhook-timestamp": r.Header.Get("webhook-timestamp"),
			"webhook-signature": r.Header.Get("webhook-signature"),
		}, "body": string(body)})
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	body := `{"id":"evt_7","type":"import_process.complete-v1","data":{"external_account_number":"EXT-0001"}}`
	if o := webhook.NewSender(webhook.Guard{AllowPrivate: true}, 0).Send(t.Context(), srv.URL, []string{rotated, secret}, "evt_7", []byte(body)); !o.Delivered() {
		t.Fatalf("webhook: %+v", o)
	}
	p := filepath.Join(t.TempDir(), "delivery.json")
	if err := os.WriteFile(p, got, 0o600); err != nil {
		t.Fatal(err)
	}
	return p, secret
}

// A partner's Go program outside the repository: its own go.mod requiring
// the SDK module by its path and a version (no replace), fetched through a
// module proxy, built, and run against a private stack: the README's
// walk-through with typed calls, a bulk job end to end among it, every
// exchange checked against the OpenAPI document.
func TestGoSDKAsAPartnerModuleRunsTheWalkthrough(t *testing.T) {
	root := repoRoot(t)
	proxy, version := moduleProxy(t)
	app := t.TempDir()
	main, err := os.ReadFile(filepath.Join(root, "sdk/go/examples/walkthrough/main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(app, "main.go"), main, 0o600); err != nil {
		t.Fatal(err)
	}
	gomod := "module example.com/partner\n\ngo 1.24\n\nrequire " + sdkModule + " " + version + "\n"
	if err := os.WriteFile(filepath.Join(app, "go.mod"), []byte(gomod), 0o600); err != nil {
		t.Fatal(err)
	}
	upstream := strings.TrimSpace(run(t, root, nil, "go", "env", "GOPROXY"))
	goEnv := []string{"GOPROXY=file://" + filepath.ToSlash(proxy) + "," + upstream, "GONOSUMDB=github.com/gridshift",
		"GOFLAGS=-mod=mod", "GOWORK=off"}
	run(t, app, goEnv, "go", "mod", "tidy")
	if b, _ := os.ReadFile(filepath.Join(app, "go.mod")); strings.Contains(string(b), "replace") {
		t.Fatalf("the partner's go.mod has a replace:\n%s", b)
	}
	run(t, app, goEnv, "go", "build", "-o", "walkthrough", ".")

	st, key := newStack(t)
	contract := testutil.ContractProxy(t, st.Server.URL) // every exchange checked against the document
	delivery, secret := webhookDelivery(t)
	got := run(t, app, []string{
		"DATAIMPORT_URL=" + contract.URL,
		"DATAIMPORT_API_KEY=" + key,
		"ACCOUNT_FILE=" + filepath.Join(root, "pkg/dataimport/testdata/account_valid.json"),
		"WEBHOOK_FILE=" + delivery, "WEBHOOK_SECRET=" + secret,
	}, filepath.Join(app, "walkthrough"))
	if !strings.Contains(got, `"ok":true`) || !strings.Contains(got, `"webhook_verified":true`) {
		t.Fatalf("the walk-through did not finish: %s", got)
	}
	t.Logf("Go walk-through (SDK %s): %s", version, strings.TrimSpace(got))
}
