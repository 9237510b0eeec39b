package testutil

import "testing"

// The README walk-through failed in CI with "a process exited": a port
// handed out from the kernel's ephemeral range can be taken by an outgoing
// connection before the child binds it. Ports come from below that range,
// are free when handed out, and never twice.
func TestFreePortIsBelowTheEphemeralRangeAndNeverRepeats(t *testing.T) {
	_, hi := portRange()
	seen := map[int]bool{}
	for range 500 {
		p := FreePort(t)
		if p >= hi || p < 1024 {
			t.Fatalf("port %d outside [1024, %d)", p, hi)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}
