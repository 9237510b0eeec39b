package deploy_test

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// `make test` failed on a fresh machine when the clone lived where the
// postgres user cannot traverse (in /root, or a `mktemp -d` folder, mode
// 700): services.sh put the private cluster in the repo's .data/, which
// pg_ctl, run as postgres, could not reach. The script, copied into such a
// folder, must bring a private Postgres and Redis up on free ports (never
// the shared 5432/6379, which it is told are not there) and take them down.
func TestServicesUnderAnUnreachableRepo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root runs the servers as another user")
	}
	if _, err := user.Lookup("postgres"); err != nil {
		t.Skip("no postgres user")
	}
	if _, err := exec.LookPath("runuser"); err != nil {
		t.Skip("no runuser")
	}
	dir, err := os.MkdirTemp("", "dataimport-clone-") // mode 700, as mktemp -d
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	repo := filepath.Join(dir, "repo")
	script := filepath.Join(repo, "deploy", "local", "services.sh")
	must(t, os.MkdirAll(filepath.Dir(script), 0o755))
	body, err := os.ReadFile(filepath.Join(root, "deploy", "local", "services.sh"))
	must(t, err)
	must(t, os.WriteFile(script, body, 0o755))

	pg, rd := strconv.Itoa(testutil.FreePort(t)), strconv.Itoa(testutil.FreePort(t))
	run := func(arg string) string {
		cmd := exec.Command(script, arg)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "DATA_DIR=", "DATABASE_URL=postgres://postgres@127.0.0.1:1/postgres?sslmode=disable",
			"REDIS_URL=redis://127.0.0.1:1/0", "PRIVATE_PG_PORT="+pg, "PRIVATE_REDIS_PORT="+rd)
		out, err := cmd.Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("services.sh %s: %v\n%s%s", arg, err, out, stderr)
		}
		return string(out)
	}
	sum := sha256.Sum256([]byte(repo))
	data := "/var/tmp/dataimport-" + hex.EncodeToString(sum[:])[:16]
	t.Cleanup(func() {
		cmd := exec.Command(script, "down")
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "DATA_DIR=", "PRIVATE_PG_PORT="+pg, "PRIVATE_REDIS_PORT="+rd)
		_ = cmd.Run()
		os.RemoveAll(data) // only the folder this test's clone made
	})
	out := run("up")
	if !strings.Contains(out, "127.0.0.1:"+pg+"/") || !strings.Contains(out, "127.0.0.1:"+rd+"/") {
		t.Fatalf("services.sh up printed %q, want the private servers on %s and %s", out, pg, rd)
	}
	if _, err := os.Stat(filepath.Join(repo, ".data", "pg")); err == nil {
		t.Errorf("the cluster went into the unreachable repo's .data/")
	}
	if c, err := net.Dial("tcp", "127.0.0.1:"+pg); err != nil {
		t.Errorf("private Postgres does not answer: %v", err)
	} else {
		c.Close()
	}
	// The data stays the postgres user's alone, outside the repo.
	if fi, err := os.Stat(data); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v, want a folder of mode 700", data, err)
	} else if _, err := os.Stat(filepath.Join(data, "pg", "PG_VERSION")); err != nil {
		t.Errorf("no cluster in %s: %v", data, err)
	}
	run("down")
	if c, err := net.Dial("tcp", "127.0.0.1:"+pg); err == nil {
		c.Close()
		t.Errorf("private Postgres still answers after down")
	}
	// A Redis left running outlives the test run (one was found hours later).
	if c, err := net.Dial("tcp", "127.0.0.1:"+rd); err == nil {
		c.Close()
		t.Errorf("private Redis still answers after down")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
