package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// TestMarkdownLinksResolveInAClone checks every relative link of every
// Markdown file the repository tracks: it names a file or folder of the
// clone (and, with a #fragment, a heading of that file), never a place
// outside the repository.
func TestMarkdownLinksResolveInAClone(t *testing.T) {
	root := testutil.RepoRoot()
	out, err := exec.Command("git", "-C", root, "ls-files", "*.md").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	files := strings.Fields(string(out))
	if len(files) < 5 {
		t.Fatalf("only %d Markdown files tracked", len(files))
	}
	for _, f := range files {
		if strings.Contains(f, "node_modules/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "<") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			abs := filepath.Join(root, filepath.Dir(f), path)
			if path == "" {
				abs = filepath.Join(root, f)
			}
			if rel, err := filepath.Rel(root, abs); err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s: link %s leaves the repository", f, target)
				continue
			}
			info, err := os.Stat(abs)
			if err != nil {
				t.Errorf("%s: link %s: %v", f, target, err)
				continue
			}
			if frag != "" && !info.IsDir() && strings.HasSuffix(abs, ".md") && !hasHeading(t, abs, frag) {
				t.Errorf("%s: link %s: no heading #%s there", f, target, frag)
			}
		}
	}
}

// hasHeading reports whether the Markdown file has a heading whose GitHub
// anchor is frag.
func hasHeading(t *testing.T, file, frag string) bool {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	drop := regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		if strings.ReplaceAll(drop.ReplaceAllString(h, ""), " ", "-") == frag {
			return true
		}
	}
	return false
}
