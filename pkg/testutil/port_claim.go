package testutil

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
)

// Test processes run side by side (`make test` runs several packages at
// once) and each picks its servers' ports at random. A port one process
// found free could be picked by another before the first one's child bound
// it, and that child then failed to start ("redis-server did not answer").
// claimPort takes an exclusive lock on a file named after the port, held
// until this process exits, so no two test processes of this machine are
// given the same port.

var (
	claimMu  sync.Mutex
	claimDir string
	claims   []*os.File // kept open: closing one would release its lock
)

// claimPort reports whether this process now holds port's claim.
func claimPort(port int) bool {
	claimMu.Lock()
	defer claimMu.Unlock()
	if claimDir == "" {
		dir := filepath.Join(os.TempDir(), "dataimport-test-ports")
		if err := os.MkdirAll(dir, 0o1777); err != nil {
			return true // no shared place: fall back to the listen check alone
		}
		_ = os.Chmod(dir, 0o1777) // every user's test runs share it
		claimDir = dir
	}
	f, err := os.OpenFile(filepath.Join(claimDir, strconv.Itoa(port)), os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return false // another user's claim file: not ours to take
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return false
	}
	claims = append(claims, f)
	return true
}
