package priority

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// With the kernel's session groups on (sched_autogroup_enabled, the default
// of most distributions), the CPU is shared between sessions first, and a
// thread's niceness only counts inside its own session. Postgres starts
// every backend in a session of its own, so a reniced backend still got the
// same share as a partner's status read: only its session group's niceness
// (/proc/PID/autogroup) lowers it.

// autogroupEnabled is where the kernel says whether session groups are on.
var autogroupEnabled = "/proc/sys/kernel/sched_autogroup_enabled"

// LowerSessionGroup sets the niceness of the session group of process pid
// to n unless it is already at n or nicer, and tells whether it changed it.
// It does so only when session groups are on and pid leads its session, so
// the group is its own and nobody else is lowered with it.
func LowerSessionGroup(pid, n int) (bool, error) {
	if n <= 0 {
		return false, nil
	}
	on, err := os.ReadFile(autogroupEnabled)
	if err != nil || string(bytes.TrimSpace(on)) != "1" {
		return false, nil // no session groups: the thread's niceness is what counts
	}
	if sid, err := sessionOf(pid); err != nil {
		return false, err
	} else if sid != pid {
		return false, fmt.Errorf("session group of process %d: it does not lead its session (%d)", pid, sid)
	}
	path := fmt.Sprintf("/proc/%d/autogroup", pid)
	cur, err := groupNice(path)
	if err != nil {
		return false, err
	}
	if cur >= n {
		return false, nil
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(n)), 0); err != nil {
		return false, fmt.Errorf("lower session group of process %d: %w", pid, err)
	}
	return true, nil
}

// groupNice reads "/autogroup-123 nice 5" from an autogroup file.
func groupNice(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("session group: %w", err)
	}
	f := bytes.Fields(b)
	if len(f) != 3 || string(f[1]) != "nice" {
		return 0, fmt.Errorf("session group: unexpected %s: %q", path, b)
	}
	n, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, fmt.Errorf("session group: %s: %w", path, err)
	}
	return n, nil
}

// sessionOf is process pid's session id, from /proc/PID/stat (the sixth
// field, counted after the command name, which may hold spaces).
func sessionOf(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("session of process %d: %w", pid, err)
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("session: unreadable /proc stat")
	}
	// After ") ": state ppid pgrp session ...
	f := bytes.Fields(b[i+1:])
	if len(f) < 4 {
		return 0, errors.New("session: short /proc stat")
	}
	return strconv.Atoi(string(f[3]))
}
