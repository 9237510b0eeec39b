package main

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/csvconvert"
)

// The documented example passes offline with make run's demo supplier's
// rules: market GB and the demo catalogue.
func TestConvertExampleValidOffline(t *testing.T) {
	t.Parallel()
	args := append([]string{"convert", "--validate", "--market", "GB", "--catalogue",
		filepath.Join("..", "..", "deploy", "local", "demo_products.json")}, exampleArgs(exampleDir(t))...)
	out, errs, err := runOffline(t, args...)
	if err != nil || !strings.Contains(errs, "5 accounts written, 0 left out, 0 row errors, 0 written accounts invalid") {
		t.Fatalf("convert: %v\n%s", err, errs)
	}
	if n := strings.Count(out, "\n"); n != 5 {
		t.Fatalf("%d accounts, want 5", n)
	}
	for _, bad := range [][]string{
		{"--market", "GB"},                           // without --validate
		{"--validate", "--market", "XX"},             // unknown market
		{"--validate", "--catalogue", "nope"},        // missing file
		{"--validate", "--remote", "--market", "GB"}, // the supplier's own rules
	} {
		if _, _, err := runOffline(t, append(append([]string{"convert"}, bad...), exampleArgs(exampleDir(t))...)...); err == nil || errors.Is(err, errSomeFailed) {
			t.Errorf("%v: %v, want the run refused", bad, err)
		}
	}
}

// Issue: with one child file unsorted, convert wrote 198 accounts, 191 of
// them without customers. Now it names the file and line, writes nothing
// and exits 2.
func TestConvertUnsortedChildWritesNothing(t *testing.T) {
	t.Parallel()
	dir := copyExample(t, nil)
	p := filepath.Join(dir, "customers.csv")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	// The first account's customer moved to the end.
	lines = append(append([]string{lines[0]}, lines[2:]...), lines[1])
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errs, err := runOffline(t, append([]string{"convert"}, exampleArgs(dir)...)...)
	if !errors.Is(err, errSomeFailed) {
		t.Fatalf("convert: %v, want exit 2\n%s", err, errs)
	}
	if out != "" {
		t.Fatalf("accounts written from an unsorted file:\n%s", out)
	}
	want := filepath.Join(dir, "customers.csv") + `:` + strconv.Itoa(len(lines)) + `:1: column ACCOUNT_NO: key "100017" comes after`
	if !strings.Contains(errs, want) || !strings.Contains(errs, "nothing converted") {
		t.Fatalf("stderr lacks %q:\n%s", want, errs)
	}
}

// convert init writes a draft from the headers that convert can load.
func TestConvertInit(t *testing.T) {
	t.Parallel()
	dir := exampleDir(t)
	var files []string
	for _, n := range []string{"accounts", "customers", "premises", "meters", "agreements", "notes"} {
		files = append(files, filepath.Join(dir, n+".csv"))
	}
	out, errs, err := runOffline(t, append([]string{"convert", "init"}, files...)...)
	if err != nil {
		t.Fatalf("init: %v\n%s", err, errs)
	}
	if _, err := csvconvert.Load([]byte(out)); err != nil {
		t.Fatalf("draft does not load: %v\n%s", err, out)
	}
	for _, want := range []string{"FIRST_NAME: given_name", "path: customers", "parent_key: PREMISE_ID", "# CUST_SEQ:"} {
		if !strings.Contains(out, want) {
			t.Errorf("draft lacks %q", want)
		}
	}
	if _, _, err := runOffline(t, "convert", "init", filepath.Join(dir, "nope.csv")); err == nil {
		t.Error("missing file accepted")
	}
}
