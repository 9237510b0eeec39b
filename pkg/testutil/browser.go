package testutil

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Chromium finds Debian's Chromium, installing the package when it is
// missing (as root, or through sudo -n). The test is skipped, loudly, only
// if that is impossible.
func Chromium(tb testing.TB) string {
	tb.Helper()
	find := func() string {
		for _, name := range []string{"chromium", "chromium-browser"} {
			if p, err := exec.LookPath(name); err == nil {
				return p
			}
		}
		return ""
	}
	if p := find(); p != "" {
		return p
	}
	tb.Log("chromium not found: installing Debian's package (apt-get install chromium)")
	out, err := aptInstall("chromium")
	if p := find(); p != "" {
		return p
	}
	skipLoudly(tb, fmt.Sprintf("Chromium is missing and could not be installed (%v). Install it with: apt-get install chromium\n%.2000s", err, out))
	return ""
}

// NodePackages returns dir (relative to the repository root) after making
// sure its node_modules match its package-lock.json (npm ci when missing),
// installing Debian's nodejs and npm first if node is missing.
func NodePackages(tb testing.TB, dir string) string {
	tb.Helper()
	abs := filepath.Join(repoRoot(), dir)
	if _, err := exec.LookPath("node"); err != nil {
		if out, err := aptInstall("nodejs", "npm"); err != nil {
			skipLoudly(tb, fmt.Sprintf("node is missing and could not be installed (%v)\n%.2000s", err, out))
		}
	}
	if _, err := os.Stat(filepath.Join(abs, "node_modules", ".package-lock.json")); err == nil {
		return abs
	}
	tb.Logf("installing %s's node packages (npm ci)", dir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = abs
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("npm ci in %s: %v\n%s", dir, err, out)
	}
	return abs
}

func aptInstall(pkgs ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	script := "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq " + strings.Join(pkgs, " ")
	if os.Geteuid() != 0 {
		script = "sudo -n sh -c '" + script + "'"
	}
	return exec.CommandContext(ctx, "sh", "-c", script).CombinedOutput()
}

func skipLoudly(tb testing.TB, why string) {
	tb.Helper()
	bar := strings.Repeat("!", 78)
	msg := fmt.Sprintf("\n%s\n!!! BROWSER TEST NOT RUN: %s\n%s", bar, why, bar)
	fmt.Fprintln(os.Stderr, msg)
	tb.Skip(msg)
}

// RepoRoot is the repository's root directory.
func RepoRoot() string { return repoRoot() }

func repoRoot() string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "..", "..")
}

// Tools makes sure each command is on PATH, installing Debian's package of
// the same name when one is missing (as make run would); it fails the test
// when that cannot be done.
func Tools(tb testing.TB, commands ...string) {
	tb.Helper()
	for _, c := range commands {
		if _, err := exec.LookPath(c); err == nil {
			continue
		}
		if out, err := aptInstall(c); err != nil {
			tb.Fatalf("%s is missing and could not be installed (%v)\n%.2000s", c, err, out)
		}
	}
}
