package httpapi_test

import (
	"go/ast"
	"go/types"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// Every datetime the API writes is a dataimport.DateTime, whose one wire
// form is YYYY-MM-DDTHH:MM:SSZ. A time.Time in a response body would be
// written by encoding/json with fractional seconds and the server's offset
// (issue 21), so this test closes the class: it type-checks the handlers,
// finds every value they serialise (c.JSON, json.Marshal, an Encoder's
// Encode, and each value of a gin.H literal), walks the types of those
// values field by field into every package, and fails on a serialised
// time.Time or *time.Time anywhere in them.
func TestNoResponseSerialisesTimeTime(t *testing.T) {
	pkgs, err := packages.Load(&packages.Config{
		Mode: packages.NeedName | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax,
		Dir:  ".",
	}, ".")
	if err != nil {
		t.Fatal(err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		t.Fatal("the handlers do not type-check")
	}
	w := &timeWalker{seen: map[types.Type]bool{}}
	sinks := 0
	for _, pkg := range pkgs {
		for _, file := range pkg.Syntax {
			ast.Inspect(file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				arg := serialisedArg(pkg.TypesInfo, call)
				if arg == nil {
					return true
				}
				sinks++
				where := pkg.Fset.Position(call.Pos()).String()
				w.expr(pkg.TypesInfo, arg, where)
				return true
			})
		}
	}
	if sinks < 15 {
		t.Fatalf("found only %d serialised values: the scan is broken", sinks)
	}
	for _, p := range w.problems {
		t.Error(p)
	}
}

// serialisedArg returns the value call writes as JSON, or nil.
func serialisedArg(info *types.Info, call *ast.CallExpr) ast.Expr {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	switch sel.Sel.Name {
	case "JSON", "IndentedJSON", "PureJSON", "AbortWithStatusJSON":
		if recv := info.TypeOf(sel.X); recv != nil && strings.HasSuffix(recv.String(), "gin.Context") && len(call.Args) == 2 {
			return call.Args[1]
		}
	case "Marshal", "MarshalIndent":
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == "json" && len(call.Args) >= 1 {
			return call.Args[0]
		}
	case "Encode":
		if recv := info.TypeOf(sel.X); recv != nil && strings.HasSuffix(recv.String(), "json.Encoder") && len(call.Args) == 1 {
			return call.Args[0]
		}
	}
	return nil
}

type timeWalker struct {
	seen     map[types.Type]bool
	problems []string
}

// expr walks the static type of e; for a map/slice literal of interface
// values (gin.H) it walks each element's own type instead.
func (w *timeWalker) expr(info *types.Info, e ast.Expr, where string) {
	if lit, ok := e.(*ast.CompositeLit); ok {
		if _, isIface := elemType(info.TypeOf(e)).Underlying().(*types.Interface); isIface {
			for _, elt := range lit.Elts {
				if kv, ok := elt.(*ast.KeyValueExpr); ok {
					elt = kv.Value
				}
				w.expr(info, elt, where)
			}
			return
		}
	}
	w.typ(info.TypeOf(e), where)
}

func elemType(t types.Type) types.Type {
	switch u := t.Underlying().(type) {
	case *types.Map:
		return u.Elem()
	case *types.Slice:
		return u.Elem()
	}
	return types.Typ[types.Invalid]
}

func (w *timeWalker) typ(t types.Type, where string) {
	if t == nil {
		return
	}
	if p, ok := t.(*types.Pointer); ok {
		w.typ(p.Elem(), where)
		return
	}
	if n, ok := t.(*types.Named); ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "time" && n.Obj().Name() == "Time" {
		w.problems = append(w.problems, where+": serialises a time.Time; use dataimport.DateTime")
		return
	}
	if isDateTime(t) || w.seen[t] {
		return
	}
	w.seen[t] = true
	if m := marshaller(t); m != nil {
		if m.Pkg() != nil && m.Pkg().Path() == "time" { // an embedded time.Time
			w.problems = append(w.problems, where+": "+t.String()+" is written by time.Time's MarshalJSON; use dataimport.DateTime")
		}
		return
	}
	switch u := t.Underlying().(type) {
	case *types.Slice:
		w.typ(u.Elem(), where)
	case *types.Array:
		w.typ(u.Elem(), where)
	case *types.Map:
		w.typ(u.Elem(), where)
	case *types.Struct:
		for i := range u.NumFields() {
			f := u.Field(i)
			tag := reflect.StructTag(u.Tag(i)).Get("json")
			if tag == "-" || (!f.Exported() && !f.Embedded()) {
				continue
			}
			w.typ(f.Type(), where+" ."+f.Name())
		}
	}
}

func isDateTime(t types.Type) bool {
	n, ok := t.(*types.Named)
	return ok && n.Obj().Pkg() != nil && strings.HasSuffix(n.Obj().Pkg().Path(), "/pkg/dataimport") && n.Obj().Name() == "DateTime"
}

// marshaller returns t's MarshalJSON (decimal, Money, Date,
// json.RawMessage...), whose output replaces t's fields, or nil.
func marshaller(t types.Type) *types.Func {
	for _, typ := range []types.Type{t, types.NewPointer(t)} {
		if obj, _, _ := types.LookupFieldOrMethod(typ, true, nil, "MarshalJSON"); obj != nil {
			if f, ok := obj.(*types.Func); ok {
				return f
			}
		}
	}
	return nil
}
