//go:build !linux

package main

// runNiced calls fn: niceness per thread is a Linux matter.
func runNiced(_ int, fn func() error) error { return fn() }
