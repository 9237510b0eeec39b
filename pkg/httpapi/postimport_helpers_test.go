package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/testutil"
)

const (
	notesPath        = "/v1/data-import/notes/create/"
	transactionsPath = "/v1/data-import/transactions/create/"
	statementsPath   = "/v1/data-import/historical-statements/create/"
)

// postImport is a stack with a worker, a file:// document store, supplier
// DEMO_ENERGY (document root "demo") and a tenant acting for it.
type postImport struct {
	*testutil.Stack
	token string
	docs  string // the bucket's directory
}

func newPostImport(t *testing.T) *postImport {
	t.Helper()
	docs := t.TempDir()
	st := testutil.NewStack(t, testutil.FastPipeline, func(c *testutil.StackConfig) { c.DocumentStoreURL = "file://" + filepath.ToSlash(docs) })
	ctx := context.Background()
	if _, err := st.DB.CreateSupplier(ctx, dataimport.Supplier{Code: "DEMO_ENERGY", DocumentRoot: "demo", PhoneRegion: "GB"}); err != nil {
		t.Fatal(err)
	}
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	if _, err := st.DB.CreateTeam(ctx, "Migrations"); err != nil {
		t.Fatal(err)
	}
	st.StartWorker()
	return &postImport{Stack: st, token: ten.Token, docs: docs}
}

// imported creates the sample account as external.
func (p *postImport) imported(external string) string {
	p.TB.Helper()
	return p.ImportAccount(p.token, "DEMO_ENERGY", external, "Migrations")
}

// doc puts documents into DEMO_ENERGY's root of the store.
func (p *postImport) doc(paths ...string) {
	p.TB.Helper()
	for _, rel := range paths {
		full := filepath.Join(p.docs, "demo", filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			p.TB.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("%PDF-1.4"), 0o644); err != nil {
			p.TB.Fatal(err)
		}
	}
}

func (p *postImport) post(path string, body any) testutil.Response {
	p.TB.Helper()
	return p.As(p.token, http.MethodPost, path, body)
}

func (p *postImport) count(query string, args ...any) int64 {
	p.TB.Helper()
	var n int64
	if err := p.DB.Gorm().Raw(query, args...).Scan(&n).Error; err != nil {
		p.TB.Fatal(err)
	}
	return n
}

// balance is the account's balance as Postgres prints it (exact).
func (p *postImport) balance(external string) string {
	p.TB.Helper()
	var b string
	if err := p.DB.Gorm().Raw(`SELECT balance::text FROM accounts WHERE external_account_number = ?`, external).Scan(&b).Error; err != nil {
		p.TB.Fatal(err)
	}
	return b
}

// sample reads one of pkg/dataimport/testdata's samples, for external.
func sample(t *testing.T, name, external string) string {
	t.Helper()
	b, err := testutil.ReadRepoFile("pkg/dataimport/testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), `"EXT-0001"`, `"`+external+`"`)
}

// body builds a post-import request for external with the given list.
func body(external, key string, items ...string) string {
	return `{"import_supplier":"DEMO_ENERGY","external_account_number":"` + external + `","` + key + `":[` + strings.Join(items, ",") + `]}`
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// oddPaths are refused on every document-path field: NUL by the binder
// (null_characters_not_allowed), the others by the path rules.
var oddPaths = map[string]string{
	"../x":                              "invalid_document_path",
	"/abs":                              "invalid_document_path",
	"a/./b.pdf":                         "invalid_document_path",
	`a\b.pdf`:                           "invalid_document_path",
	"a\x00b":                            "null_characters_not_allowed",
	"a\tb.pdf":                          "invalid_document_path",
	"a//b.pdf":                          "invalid_document_path",
	strings.Repeat("d/", 998) + "x.pdf": "invalid_document_path", // 2,001 characters
}
