package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// A pool opened WithSessionNice runs each of its sessions' backends at that
// niceness, and touches no other backend: the test database's own pool
// (opened without it) keeps priority 0.
func TestSessionNiceLowersThisPoolsBackendsOnly(t *testing.T) {
	ctx := context.Background()
	d := testutil.NewDatabase(t)
	plainPID := backendPID(t, ctx, d.DB)
	if _, err := backendNice(plainPID); errors.Is(err, fs.ErrNotExist) {
		t.Skip("the test Postgres is not a process of this host; WithSessionNice leaves such sessions alone")
	}
	db, err := postgres.Open(ctx, d.URL, postgres.WithSessionNice(6, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sqlDB, err := db.Gorm().DB()
	if err != nil {
		t.Fatal(err)
	}
	// Several sessions at once, so the pool opens several backends.
	for range 3 {
		conn, err := sqlDB.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var pid int
		if err := conn.QueryRowContext(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
			t.Fatal(err)
		}
		if n, err := backendNice(pid); err != nil || n != 6 {
			t.Fatalf("backend %d of the niced pool: nice %d (%v), want 6", pid, n, err)
		}
	}
	if n, err := backendNice(plainPID); err != nil || n != 0 {
		t.Fatalf("backend %d of the other pool: nice %d (%v), want 0", plainPID, n, err)
	}
}

func backendPID(t *testing.T, ctx context.Context, db *postgres.DB) int {
	t.Helper()
	var pid int
	if err := db.Gorm().WithContext(ctx).Raw(`SELECT pg_backend_pid()`).Scan(&pid).Error; err != nil {
		t.Fatal(err)
	}
	return pid
}

// backendNice reads a process's niceness from /proc/<pid>/stat (field 19).
func backendNice(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command may hold spaces: the fields start after its ')'.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 17 {
		return 0, fmt.Errorf("stat of %d: %q", pid, b)
	}
	return strconv.Atoi(f[16])
}
