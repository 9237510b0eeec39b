package testutil

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// DeclaredConsts reads the string constants of type typeName declared in
// the non-test Go files of dir, in source order. Tests that must cover every
// value of an enum (every job state, every v2 status) walk this list, so a
// value added to the code without a row in the test fails it.
func DeclaredConsts(tb testing.TB, dir, typeName string) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		tb.Fatal(err)
	}
	var out []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			tb.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != typeName {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok {
						tb.Fatalf("%s: a %s constant that is not a literal", name, typeName)
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						tb.Fatal(err)
					}
					out = append(out, s)
				}
			}
		}
	}
	if len(out) == 0 {
		tb.Fatalf("no constant of type %s in %s: the parser no longer sees them", typeName, dir)
	}
	return out
}
