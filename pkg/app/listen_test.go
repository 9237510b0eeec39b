package app_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// A replica that could not bind its probe port (WORKER_HTTP_ADDR taken)
// logged an error and ran on without /metrics or /readyz. Every listener of
// every process is now bound before work starts, and one that cannot be
// makes the process exit non-zero, naming the setting.
func TestPortTakenExitsNonZero(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	taken := held.Addr().String()
	db := testutil.NewDatabase(t)
	rds := testutil.NewRedis(t)
	for _, tc := range []struct {
		binary, setting string
		env             []string
	}{
		{"worker", "WORKER_HTTP_ADDR", []string{"WORKER_HTTP_ADDR=" + taken}},
		{"worker", "PPROF_ADDR", []string{"WORKER_HTTP_ADDR=127.0.0.1:0", "PPROF_ADDR=" + taken}},
		{"api", "HTTP_ADDR", []string{"HTTP_ADDR=" + taken}},
		{"api", "CONSOLE_ADDR", []string{"HTTP_ADDR=127.0.0.1:0", "CONSOLE_ADDR=" + taken}},
	} {
		t.Run(tc.binary+" "+tc.setting, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, testutil.Binary(t, tc.binary))
			cmd.Env = append(append(os.Environ(), "DATABASE_URL="+db.URL, "REDIS_URL="+rds.URL, "PPROF_ADDR="), tc.env...)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			var exit *exec.ExitError
			if ctx.Err() != nil || !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("%s with %s taken: %v (still running after 30 s: %t), want a non-zero exit\n%s", tc.binary, tc.setting, err, ctx.Err() != nil, out.String())
			}
			if !strings.Contains(out.String(), tc.setting+"="+taken) || !strings.Contains(out.String(), "address already in use") {
				t.Errorf("%s's output does not say which setting's port is taken:\n%s", tc.binary, out.String())
			}
		})
	}
}
