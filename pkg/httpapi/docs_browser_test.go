package httpapi_test

import (
	"bytes"
	"context"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// TestDocsPageRendersInChromium loads GET /docs of the real API in headless
// Chromium (Debian's package, installed when missing) and checks that Swagger
// UI, served from the binary with no CDN, rendered the operations: the DOM
// names them and the screenshot is not blank. The screenshot is kept in
// results/docs-screenshot.png.
func TestDocsPageRendersInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: skipped with -short")
	}
	chromium := testutil.Chromium(t)
	st := testutil.NewStack(t)
	if r := st.Request(http.MethodGet, "/docs", nil); r.Status != http.StatusOK {
		t.Fatalf("GET /docs: %d %s", r.Status, r.Body)
	}
	url := st.Server.URL + "/docs"

	shot := filepath.Join(t.TempDir(), "docs.png")
	runChromium(t, chromium, "--screenshot="+shot, "--window-size=1280,1600", url)
	raw, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1280 || b.Dy() != 1600 {
		t.Errorf("screenshot is %dx%d, want 1280x1600", b.Dx(), b.Dy())
	}
	colours := map[[4]uint32]bool{}
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y += 2 {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x += 2 {
			r, g, b, a := img.At(x, y).RGBA()
			colours[[4]uint32{r, g, b, a}] = true
		}
	}
	// A blank or error page has a handful of colours; Swagger UI's coloured
	// method badges, text and borders give hundreds.
	if len(colours) < 50 {
		t.Errorf("screenshot looks blank: %d distinct colours", len(colours))
	}
	if err := os.MkdirAll(filepath.Join(repoRoot(), "results"), 0o755); err == nil {
		if err := os.WriteFile(filepath.Join(repoRoot(), "results", "docs-screenshot.png"), raw, 0o644); err != nil {
			t.Logf("could not keep the screenshot: %v", err)
		}
	}

	dom := runChromium(t, chromium, "--dump-dom", url)
	for _, want := range []string{
		"swagger-ui", "Account-migration data-import API",
		"/v1/data-import/account-transfer-status/", "/v1/data-import/validate-account/",
		"/v1/data-import/transactions/create/", "/v1/graphql/",
		"/v2/data-import/accounts/", "/v2/data-import/accounts/{import_supplier}/{external_account_number}/events/",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered page does not contain %q", want)
		}
	}
	for _, bad := range []string{"Resolver error", "errors-wrapper", "Failed to load API definition"} {
		if strings.Contains(dom, bad) {
			t.Errorf("Swagger UI reports a problem with the document: %q", bad)
		}
	}
	if n := strings.Count(dom, `class="opblock opblock-`); n < 23 {
		t.Errorf("rendered %d operations, want at least 23 (18 of v1, 5 of v2)", n)
	}
	if t.Failed() {
		t.Logf("DOM (first 3000 bytes):\n%.3000s", dom)
	}
}

// runChromium runs headless Chromium on a private profile and returns its
// standard output.
func runChromium(t *testing.T, chromium string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir(), "--virtual-time-budget=8000"}
	cmd := exec.CommandContext(ctx, chromium, append(base, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

func repoRoot() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..")
}
