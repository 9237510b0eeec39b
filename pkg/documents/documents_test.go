package documents

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

func TestKey(t *testing.T) {
	for _, tc := range []struct{ root, path, want string }{
		{"", "a/b.pdf", "a/b.pdf"},
		{"acme", "a/b.pdf", "acme/a/b.pdf"},
		{"/acme/docs/", "b.pdf", "acme/docs/b.pdf"},
		{"/", "b.pdf", "b.pdf"},
	} {
		if got := Key(tc.root, tc.path); got != tc.want {
			t.Errorf("Key(%q, %q) = %q, want %q", tc.root, tc.path, got, tc.want)
		}
	}
}

func TestValidateIsTheDomainRule(t *testing.T) {
	for _, p := range []string{"a/b.pdf", "../x", "/abs", "a/./b", `a\b`, "a\x00b", strings.Repeat("a", 2000), ""} {
		c1, ok1 := Validate(p)
		c2, ok2 := dataimport.ValidateDocumentPath(p)
		if c1 != c2 || ok1 != ok2 {
			t.Errorf("%.20q: %q,%v vs %q,%v", p, c1, ok1, c2, ok2)
		}
	}
	if _, ok := ValidatePDF("a/b.txt"); ok {
		t.Error("ValidatePDF accepted a .txt")
	}
	if _, ok := ValidatePDF("a/b.pdf"); !ok {
		t.Error("ValidatePDF refused a .pdf")
	}
}

// bucket makes a file:// bucket with the given files (keys) in it.
func bucket(t *testing.T, keys ...string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	for _, k := range keys {
		p := filepath.Join(dir, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("%PDF-1.4"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return "file://" + filepath.ToSlash(dir), dir
}

func TestCheck(t *testing.T) {
	url, _ := bucket(t, "acme/letters/a.pdf", "acme/letters/b.pdf", "other/letters/c.pdf", "top.pdf")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Enabled() {
		t.Fatal("not enabled")
	}
	refs := []Ref{
		{"notes.0.document_paths.0.document_path", "letters/a.pdf"},
		{"notes.0.document_paths.1.document_path", "letters/c.pdf"}, // another supplier's root
		{"notes.1.document_paths.0.document_path", "letters/a.pdf"}, // asked twice
		{"notes.2.document_paths.0.document_path", "letters"},       // a "directory", not an object
		{"notes.3.document_paths.0.document_path", "letters/b.pdf"},
	}
	errs, err := s.Check(ctx, "acme", refs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range errs {
		if e.Code != dataimport.CodePathDoesNotExistInFileStore || e.Detail == "" {
			t.Errorf("%+v", e)
		}
		got = append(got, e.Attr)
	}
	if strings.Join(got, " ") != "notes.0.document_paths.1.document_path notes.2.document_paths.0.document_path" {
		t.Errorf("missing reported at %v", got)
	}
	// No root: keys are the paths themselves.
	if errs, err := s.Check(ctx, "", []Ref{{"x", "top.pdf"}}); err != nil || len(errs) != 0 {
		t.Errorf("root-less: %v %v", errs, err)
	}
	if ok, err := s.Exists(ctx, "/other/", "letters/c.pdf"); !ok || err != nil {
		t.Errorf("Exists: %v %v", ok, err)
	}
	// Many paths: all checked, order kept.
	many := make([]Ref, 50)
	for i := range many {
		many[i] = Ref{Attr: string(rune('a' + i%26)), Path: "letters/a.pdf"}
	}
	many[49].Path = "letters/zzz.pdf"
	if errs, err := s.Check(ctx, "acme", many); err != nil || len(errs) != 1 || errs[0].Attr != many[49].Attr {
		t.Errorf("many: %v %v", errs, err)
	}
}

func TestDisabledChecksNothing(t *testing.T) {
	for _, s := range []*Store{nil, {}} {
		errs, err := s.Check(context.Background(), "acme", []Ref{{"a", "missing.pdf"}})
		if err != nil || errs != nil || s.Enabled() {
			t.Errorf("%v %v", errs, err)
		}
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}
	s, err := Open(context.Background(), "")
	if err != nil || s.Enabled() {
		t.Fatalf("empty URL: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(context.Background(), "nosuchscheme://bucket"); err == nil {
		t.Error("unknown scheme accepted")
	}
	if _, err := Open(context.Background(), "file://"+filepath.ToSlash(filepath.Join(t.TempDir(), "missing"))); err == nil {
		t.Error("missing directory accepted")
	}
}

func TestClosedWithContext(t *testing.T) {
	url, _ := bucket(t, "a.pdf")
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	// AfterFunc runs asynchronously; once closed, lookups fail rather than lie.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, err := s.Exists(context.Background(), "", "a.pdf"); err != nil {
			return
		}
	}
	t.Error("bucket still open after its context ended")
}
