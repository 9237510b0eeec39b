//go:build !linux

package priority

import "errors"

// Lower does nothing outside Linux.
func Lower(int) error { return nil }

// Nice is 0 outside Linux.
func Nice(int) (int, error) { return 0, nil }

// LowerProcess does nothing outside Linux.
func LowerProcess(int, int) (bool, error) { return false, nil }

// ErrSharedGroup is never returned outside Linux.
var ErrSharedGroup = errors.New("the process shares its scheduling group with its session")

// LowerGroup does nothing outside Linux.
func LowerGroup(int) error { return nil }

// GroupNice is 0 outside Linux.
func GroupNice() (int, error) { return 0, nil }
