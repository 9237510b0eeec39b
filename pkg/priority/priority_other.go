//go:build !linux

package priority

// Lower does nothing outside Linux.
func Lower(int) error { return nil }

// Nice is 0 outside Linux.
func Nice(int) (int, error) { return 0, nil }

// LowerProcess does nothing outside Linux.
func LowerProcess(int, int) (bool, error) { return false, nil }
