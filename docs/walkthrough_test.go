// Package docs holds the partner and operator documentation; its tests keep
// what the documentation tells a reader to run true.
package docs

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// walkthroughBlocks returns the README's shell blocks of the section titled
// heading, in order: exactly what a reader pastes.
func walkthroughBlocks(t *testing.T, readme []byte, heading string) string {
	t.Helper()
	var (
		out             strings.Builder
		inSection, inSh bool
		blocks          int
	)
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			inSection = line == "## "+heading
		case inSection && !inSh && line == "```sh":
			inSh, blocks = true, blocks+1
		case inSh && line == "```":
			inSh = false
		case inSh:
			out.WriteString(line + "\n")
		}
	}
	if blocks == 0 {
		t.Fatalf("README has no ```sh block under %q", heading)
	}
	return out.String()
}

// TestReadmeWalkthroughOnAMakeRunStack starts `make run`'s own script
// (deploy/local/run.sh) on a private database and Redis and free ports, and
// pastes the README's walk-through into bash as a reader would, with the
// key run.sh printed. Any refusal (curl --fail-with-body under set -e) or a
// step that does not reach its stated answer fails the test.
func TestReadmeWalkthroughOnAMakeRunStack(t *testing.T) {
	testutil.Tools(t, "bash", "curl", "jq", "gzip") // the README's prerequisites
	root := testutil.RepoRoot()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	script := walkthroughBlocks(t, readme, "Walk-through")

	db, rd := testutil.NewDatabase(t), testutil.NewRedis(t)
	bin, data := t.TempDir(), t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/...")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	api := testutil.FreeAddr(t)
	env := append(os.Environ(),
		"DATABASE_URL="+db.URL, "REDIS_URL="+rd.URL, "BIN="+bin, "DATA_DIR="+data,
		"HTTP_ADDR="+api, "WORKER_HTTP_ADDR="+testutil.FreeAddr(t), "CONSOLE_ADDR="+testutil.FreeAddr(t),
		"STRIPE_MOCK_ADDR="+testutil.FreeAddr(t), "STRIPE_MOCK_HTTPS_ADDR="+testutil.FreeAddr(t))
	env = withoutVar(env, "STRIPE_API_KEY") // make run's own vendor: stripe-mock

	run := exec.Command("bash", "deploy/local/run.sh")
	run.Dir, run.Env = root, env
	run.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	var runOut testutil.SyncBuffer
	run.Stdout, run.Stderr = pw, &runOut
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Ctrl-C, as a reader stops make run; then make sure.
		_ = syscall.Kill(-run.Process.Pid, syscall.SIGINT)
		done := make(chan struct{})
		go func() { _ = run.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-run.Process.Pid, syscall.SIGKILL)
			<-done
		}
		_ = pw.Close()
	})
	keyLine := regexp.MustCompile(`KEY=(dik_\S+) BASE=(\S+)`)
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			_, _ = runOut.Write(append(sc.Bytes(), '\n'))
			if m := keyLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m
			}
		}
	}()
	var m []string
	select {
	case m = <-found:
	case <-time.After(4 * time.Minute):
		t.Fatalf("make run's script printed no key line within 4 minutes:\n%s\n%s", runOut.String(), logTails(data))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sh := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-s")
	sh.Dir = root
	sh.Env = append(withoutVar(os.Environ(), "KEY"), "KEY="+m[1], "BASE="+m[2], "TMPDIR="+t.TempDir())
	sh.Stdin = strings.NewReader(script)
	out, err := sh.CombinedOutput()
	t.Logf("walk-through output:\n%s", out)
	if err != nil {
		t.Fatalf("the README's walk-through failed (%v); make run's output:\n%s\n%s", err, runOut.String(), logTails(data))
	}
	// The README's CSV example (migrator convert) is accepted by the same
	// demo supplier and catalogue: every account it writes validates
	// offline with the supplier's rules (--market, --catalogue), online one
	// by one, and online in bulk (--remote).
	conv := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", `
		TOKEN=$(curl -sS --fail-with-body -X POST $BASE/v1/graphql/ -H 'Content-Type: application/json' \
		  -d '{"query":"mutation { obtainToken(input: {APIKey: \"'"$KEY"'\"}) { token } }"}' | jq -r .data.obtainToken.token)
		"$BIN/migrator" convert --mapping examples/convert/mapping.yaml examples/convert/*.csv --validate \
		  --market GB --catalogue deploy/local/demo_products.json 2>/dev/null |
		while read -r account; do
		  echo "$account" | curl -sS --fail-with-body "$BASE/v1/data-import/validate-account/" -H "Authorization: Token $TOKEN" \
		    -H 'Content-Type: application/json' --data @- | jq -r .external_account_number
		done
		"$BIN/migrator" convert --mapping examples/convert/mapping.yaml examples/convert/*.csv --validate --remote \
		  --api "$BASE" --api-key "$KEY" >/dev/null 2>&1`)
	conv.Dir = root
	conv.Env = append(withoutVar(os.Environ(), "KEY"), "KEY="+m[1], "BASE="+m[2], "BIN="+bin)
	convOut, err := conv.CombinedOutput()
	if err != nil || strings.Count(string(convOut), "\n") != 5 {
		t.Errorf("the CSV example (examples/convert) against make run's demo supplier: %v, want 5 accounts accepted\n%s", err, convOut)
	}

	// Each step's stated answer, in order.
	for _, want := range []string{
		`"status":"COMPLETED"`,                                       // 5
		`"type":"import_process.complete-v1"`,                        // 7
		"\nPROCESSED\n",                                              // 9
		`_STAGED","EVENT_ACCOUNT_IMPORT_PROCESS_SCHEDULED"`,          // 10
		`"status":"CANCELLED"`,                                       // 11
		`{"state":"COMPLETED","received":3,"created":3,"invalid":0}`, // 13
		"EXT-B003", // 14
	} {
		i := bytes.Index(out, []byte(want))
		if i < 0 {
			t.Fatalf("the walk-through's output lacks %s", want)
		}
		out = out[i:]
	}
}

// logTails is the end of each log make run's processes wrote: which one
// stopped, and why.
func logTails(dataDir string) string {
	files, _ := filepath.Glob(filepath.Join(dataDir, "logs", "*.log"))
	var b strings.Builder
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if len(body) > 4000 {
			body = body[len(body)-4000:]
		}
		b.WriteString("--- " + filepath.Base(f) + " (end)\n" + string(body) + "\n")
	}
	return b.String()
}

func withoutVar(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}
