// Package sdk_test checks the SDKs against the document the API serves and
// runs both against a real stack. The Go SDK is a module of its own
// (sdk/go) that must not depend on this one, so its tests that need the
// stack live here; its unit tests stay in sdk/go.
package sdk_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/httpapi"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// repoRoot is the repository root (this file is in sdk/).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// servedDocument fetches the OpenAPI document from a running API, as a
// partner's generator would, into dir.
func servedDocument(t *testing.T, dir string) string {
	t.Helper()
	srv := httptest.NewServer(httpapi.New(httpapi.Config{}, httpapi.Deps{}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + httpapi.OpenAPIPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	doc, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", httpapi.OpenAPIPath, resp.StatusCode, err)
	}
	p := filepath.Join(dir, "openapi.json")
	if err := os.WriteFile(p, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// nodeTools installs the pinned npm tools when missing and returns their
// bin directory: the script's last line (run mixes in npm's output on
// stderr when it installs).
func nodeTools(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(lastLine(run(t, repoRoot(t), nil, "deploy/local/node-tools.sh")))
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// copyFiles copies the named files of from into to.
func copyFiles(t *testing.T, from, to string, names ...string) {
	t.Helper()
	for _, f := range names {
		b, err := os.ReadFile(filepath.Join(from, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(to, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// sameFile fails when the committed generated file is not what the
// generator makes of the served document.
func sameFile(t *testing.T, generated, committed string) {
	t.Helper()
	want, err := os.ReadFile(generated)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from what the served OpenAPI document generates: run make sdk and commit", committed)
	}
}

// Both SDKs are generated from the served document in a clean directory:
// the committed generated layers must be exactly what comes out (so the Go
// one, compiled with this module, compiles as generated). The TypeScript
// SDK is then built there with its one command (npm pack, which runs npm
// run build), the tarball installed into a partner's project of its own,
// and the examples compiled there against the installed package and run
// end to end against a real stack: the README's walk-through (a bulk job
// among it), every exchange checked against the document through a
// contract proxy; then the retries.
func TestSDKsGenerateFromTheServedDocumentAndTheTypeScriptExampleRuns(t *testing.T) {
	root := repoRoot(t)
	tmp := t.TempDir()
	doc := servedDocument(t, tmp)
	nodeTools(t) // the generator
	out := filepath.Join(tmp, "out")
	run(t, root, nil, "deploy/local/sdk.sh", doc, out)
	sameFile(t, filepath.Join(out, "sdk/go/client/client.gen.go"), filepath.Join(root, "sdk/go/client/client.gen.go"))
	sameFile(t, filepath.Join(out, "sdk/ts/src/schema.ts"), filepath.Join(root, "sdk/ts/src/schema.ts"))

	// The package: the generated types beside the committed sources,
	// packed in the clean directory.
	ts := filepath.Join(out, "sdk/ts")
	copyFiles(t, filepath.Join(root, "sdk/ts"), ts, "src/client.ts", "src/webhook.ts", "src/index.ts",
		"tsconfig.json", "package.json", "package-lock.json", "README.md")
	npm := []string{"--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"}
	run(t, ts, nil, "npm", append([]string{"ci"}, npm...)...)
	tgz := filepath.Join(ts, strings.TrimSpace(lastLine(run(t, ts, nil, "npm", "pack", "--loglevel=error"))))

	// A partner's project: the examples and a package.json naming the
	// tarball, installed as a partner would.
	app := filepath.Join(tmp, "partner")
	copyFiles(t, filepath.Join(root, "sdk/ts/example"), app, "walkthrough.ts", "retry.ts", "tsconfig.json")
	pkg := `{"name":"partner","private":true,"dependencies":{"@dataimport/sdk":"file:` + filepath.ToSlash(tgz) +
		`"},"devDependencies":{"typescript":"5.9.3","@types/node":"20.19.0"}}`
	if err := os.WriteFile(filepath.Join(app, "package.json"), []byte(pkg), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, app, nil, "npm", append([]string{"install"}, npm...)...)
	installed, err := os.ReadFile(filepath.Join(app, "node_modules/@dataimport/sdk/package.json"))
	if err != nil {
		t.Fatalf("the package is not installed: %v", err)
	}
	if strings.Contains(string(installed), `"dependencies"`) {
		t.Fatalf("the SDK has runtime dependencies: %s", installed)
	}
	run(t, app, nil, filepath.Join(app, "node_modules/.bin/tsc"), "-p", ".")

	st := testutil.NewStack(t, testutil.FastPipeline)
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	if _, err := st.DB.CreateTeam(context.Background(), "Migrations"); err != nil {
		t.Fatal(err)
	}
	st.StartWorker()
	proxy := testutil.ContractProxy(t, st.Server.URL)
	delivery, secret := webhookDelivery(t)
	got := run(t, app, []string{
		"DATAIMPORT_URL=" + proxy.URL,
		"DATAIMPORT_API_KEY=" + ten.APIKey,
		"ACCOUNT_FILE=" + filepath.Join(root, "pkg/dataimport/testdata/account_valid.json"),
		"WEBHOOK_FILE=" + delivery, "WEBHOOK_SECRET=" + secret,
	}, "node", "dist/walkthrough.js")
	if !strings.Contains(got, `"ok":true`) || !strings.Contains(got, `"webhook_verified":true`) {
		t.Fatalf("the walk-through did not finish: %s", got)
	}
	t.Logf("TypeScript walk-through (%s): %s", filepath.Base(tgz), strings.TrimSpace(got))

	// Retries: the first try of the POST is answered 503 with Retry-After
	// by a front the API never sees; the client waits and sends the same
	// Idempotency-Key again. Then a gzipped job upload whose first try is
	// refused 401 token_expired: the token is renewed and the body sent
	// again whole, under the same key.
	var mu sync.Mutex
	var keys, jobKeys []string
	var times []time.Time
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/data-import/jobs/" {
			mu.Lock()
			jobKeys = append(jobKeys, r.Header.Get("Idempotency-Key"))
			first := len(jobKeys) == 1
			mu.Unlock()
			if first {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = w.Write([]byte(`{"detail":"The access token has expired; obtain a new one.","code":"token_expired"}`))
				return
			}
		}
		if r.Method == http.MethodPost && r.URL.Path == "/v1/data-import/account-import-process/create-or-update/" {
			mu.Lock()
			keys, times = append(keys, r.Header.Get("Idempotency-Key")), append(times, time.Now())
			first := len(keys) == 1
			mu.Unlock()
			if first {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(`{"detail":"Try again.","code":"service_unavailable"}`))
				return
			}
		}
		proxy.Config.Handler.ServeHTTP(w, r)
	}))
	defer front.Close()
	got = run(t, app, []string{
		"DATAIMPORT_URL=" + front.URL,
		"DATAIMPORT_API_KEY=" + ten.APIKey,
		"ACCOUNT_FILE=" + filepath.Join(root, "pkg/dataimport/testdata/account_valid.json"),
	}, "node", "dist/retry.js")
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(got, `"retries":1`) || len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Fatalf("retry: tries carried keys %q; client said %s", keys, got)
	}
	if wait := times[1].Sub(times[0]); wait < time.Second {
		t.Fatalf("retried after %s; Retry-After said 1s", wait)
	}
	if !strings.Contains(got, `"job_created":2`) || !strings.Contains(got, `"progress_restarts":1`) ||
		len(jobKeys) != 2 || jobKeys[0] == "" || jobKeys[0] != jobKeys[1] {
		t.Fatalf("job upload: tries carried keys %q; client said %s", jobKeys, got)
	}
}
