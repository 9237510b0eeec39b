package testutil

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// A port freePort gave out is claimed for the life of the process: another
// process (here: another open file description, which flock treats alike)
// cannot claim it, and freePort does not give it out again.
func TestFreePortIsClaimedAcrossProcesses(t *testing.T) {
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(claimDir, strconv.Itoa(port)), os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("no claim file for port %d: %v", port, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		t.Fatalf("port %d could be claimed by another process", port)
	}
	if claimPort(port) {
		t.Fatalf("port %d claimed twice", port)
	}
}
