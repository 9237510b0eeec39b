//go:build !linux

package app

// LowerPriority is Linux-only; elsewhere the worker keeps its priority.
func LowerPriority(int) error { return nil }
