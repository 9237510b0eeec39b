package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// runOffline executes the CLI without --api or a key, as convert needs
// neither.
func runOffline(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errs bytes.Buffer
	root := newRoot(&cli{stdout: &out, stderr: &errs})
	root.SetArgs(args)
	err = root.ExecuteContext(context.Background())
	return out.String(), errs.String(), err
}

func exampleDir(t *testing.T) string {
	t.Helper()
	b, err := testutil.ReadRepoFile("examples/convert/mapping.yaml")
	if err != nil || len(b) == 0 {
		t.Fatalf("example mapping: %v", err)
	}
	return filepath.Join("..", "..", "examples", "convert")
}

func exampleArgs(dir string) []string {
	return []string{"--mapping", filepath.Join(dir, "mapping.yaml"),
		filepath.Join(dir, "accounts.csv"), filepath.Join(dir, "customers.csv"), filepath.Join(dir, "premises.csv"),
		filepath.Join(dir, "meters.csv"), filepath.Join(dir, "agreements.csv"), filepath.Join(dir, "notes.csv")}
}

// The example export, converted by the CLI, goes through the real API
// (validate → stage → create) and every account is created with all its
// customers, meter points, agreements and notes.
func TestConvertExampleThenPush(t *testing.T) {
	t.Parallel()
	dir := exampleDir(t)
	out, errs, err := runOffline(t, append([]string{"convert", "--validate"}, exampleArgs(dir)...)...)
	if err != nil {
		t.Fatalf("convert: %v\n%s", err, errs)
	}
	if !strings.Contains(errs, "43 rows read, 5 accounts written, 0 left out, 0 row errors, 0 written accounts invalid") {
		t.Fatalf("summary: %s", errs)
	}
	if n := strings.Count(out, "\n"); n != 5 {
		t.Fatalf("%d lines, want 5:\n%s", n, out)
	}

	e := newEnv(t)
	file := filepath.Join(e.dir, "accounts.ndjson")
	if err := os.WriteFile(file, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(e.dir, "report.csv")
	if res, err := e.push(file, report); err != nil {
		t.Fatalf("push: %v\n%s", err, res)
	}
	for _, r := range readReport(t, report) {
		if r.Outcome != outcomeCompleted {
			t.Fatalf("report row %+v", r)
		}
	}
	e.checkAllImported(5)
	for table, want := range map[string]int64{
		"account_customers": 6, "supply_addresses": 6, "meter_points": 9, "agreements": 12, "account_notes": 3,
	} {
		if got := e.count(`SELECT count(*) FROM ` + table); got != want {
			t.Errorf("%s: %d rows, want %d", table, got, want)
		}
	}
}

// A malformed row is reported on stderr with file, line and column; the
// other accounts are still written; the exit status says some failed.
func TestConvertReportsMalformedRows(t *testing.T) {
	t.Parallel()
	src := exampleDir(t)
	dir := t.TempDir()
	for _, name := range []string{"mapping.yaml", "accounts.csv", "customers.csv", "premises.csv", "meters.csv", "agreements.csv", "notes.csv"} {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		switch name {
		case "meters.csv":
			b = bytes.Replace(b, []byte("100048;P-5005;1200023456824;E;1;22.08.2023"), []byte("100048;P-5005;1200023456824;E;1;22.13.2023"), 1)
		case "customers.csv": // maps fine, but the API would refuse it
			b = bytes.Replace(b, []byte("100052;1;Ms;Samira;Ahmed;sahmed@example.co.uk"), []byte("100052;1;Ms;Samira;Ahmed;sahmed(at)example.co.uk"), 1)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The file name differs from the mapping's: given as ENTITY=PATH.
	if err := os.Rename(filepath.Join(dir, "notes.csv"), filepath.Join(dir, "NOTES_20261123.csv")); err != nil {
		t.Fatal(err)
	}
	args := exampleArgs(dir)
	args[len(args)-1] = "notes=" + filepath.Join(dir, "NOTES_20261123.csv")
	out, errs, err := runOffline(t, append([]string{"convert", "--validate"}, args...)...)
	if !errors.Is(err, errSomeFailed) {
		t.Fatalf("err %v, want errSomeFailed (exit 2)\n%s", err, errs)
	}
	want := filepath.Join(dir, "meters.csv") + `:9:6: column SUPPLY_START: supply_addresses[].meter_points[].supply_start_date: "22.13.2023" is not a date in format DD.MM.YYYY (account 100048)`
	if !strings.Contains(errs, want+"\n") {
		t.Fatalf("stderr:\n%s\nwant a line:\n%s", errs, want)
	}
	if strings.Count(out, "\n") != 4 || strings.Contains(out, `"100048"`) {
		t.Fatalf("stdout should hold the 4 other accounts:\n%s", out)
	}
	// --validate: the API's rules, reported with the output line and root row.
	invalid := "output line 4 (account 100052, " + filepath.Join(dir, "accounts.csv") + ":6): invalid: customers.0.email: "
	if !strings.Contains(errs, invalid) || strings.Count(errs, ": invalid: ") != 1 {
		t.Fatalf("stderr:\n%s\nwant one line starting %s", errs, invalid)
	}
	if !strings.Contains(errs, "4 accounts written, 1 left out, 1 row errors, 1 written accounts invalid") {
		t.Fatalf("summary: %s", errs)
	}

	// A file no entity claims, and a missing entity, stop the run at once.
	_, _, err = runOffline(t, "convert", "--mapping", filepath.Join(dir, "mapping.yaml"), filepath.Join(dir, "accounts.csv"), filepath.Join(dir, "NOTES_20261123.csv"))
	if err == nil || errors.Is(err, errSomeFailed) || !strings.Contains(err.Error(), `no entity of the mapping has file "NOTES_20261123.csv"`) {
		t.Fatalf("unmatched file: %v", err)
	}
	_, _, err = runOffline(t, "convert", "--mapping", filepath.Join(dir, "mapping.yaml"), filepath.Join(dir, "accounts.csv"))
	if err == nil || !strings.Contains(err.Error(), "no file for entities customers, premises, notes, meters, agreements") {
		t.Fatalf("missing files: %v", err)
	}
}
