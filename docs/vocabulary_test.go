package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// TestVocabularyTableMatchesTheService reads docs/partner/vocabulary.md's
// status table and checks every row against dataimport.V2Status.V1, and that
// every V2Status constant declared in pkg/dataimport has a row: a new status
// cannot ship without its v1 meaning written down.
func TestVocabularyTableMatchesTheService(t *testing.T) {
	root := testutil.RepoRoot()
	doc, err := os.ReadFile(filepath.Join(root, "docs", "partner", "vocabulary.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\| (no|yes)[^|]*\\| `([A-Z_]+)` \\|$")
	documented := map[dataimport.V2Status]bool{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		v2, scheduled, v1 := dataimport.V2Status(m[1]), m[2] == "yes", dataimport.ImportStatus(m[3])
		documented[v2] = true
		if got := v2.V1(scheduled); got != v1 {
			t.Errorf("vocabulary.md: %s (scheduled %t) → %s, the service says %s", v2, scheduled, v1, got)
		}
	}
	for _, s := range declaredV2Statuses(t, filepath.Join(root, "pkg", "dataimport")) {
		if !documented[s] {
			t.Errorf("v2 status %s has no row in docs/partner/vocabulary.md", s)
		}
	}
}

// declaredV2Statuses lists the constants of type V2Status in the package's source.
func declaredV2Statuses(t *testing.T, dir string) []dataimport.V2Status {
	t.Helper()
	var out []dataimport.V2Status
	for _, s := range testutil.DeclaredConsts(t, dir, "V2Status") {
		out = append(out, dataimport.V2Status(s))
	}
	return out
}
