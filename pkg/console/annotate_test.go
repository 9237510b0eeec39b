package console

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// TestAnnotatePayload: the lines print the payload as json.Indent does
// (numbers and text as sent), and each field error lands on the line of
// the value its attr names, or, for a value left out, on its nearest
// enclosing value, marked so; whole-object errors land on the root.
func TestAnnotatePayload(t *testing.T) {
	raw := []byte(`{"a": 1.50, "s": "<b>&", "list": [{"x": null, "y": [true, 12345678901234567890]}, {}], "empty": [], "o": {"k": "v"}}`)
	errs := []dataimport.FieldError{
		{Attr: "list.0.y.1", Code: "too_big"},
		{Attr: "s", Code: "bad"},
		{Attr: "list.1.missing", Code: "required"},
		{Attr: "non_field_errors", Code: "whole"},
		{Attr: "", Code: "envelope"},
		{Attr: "o", Code: "object"},
	}
	lines, ok := annotatePayload(raw, errs)
	if !ok {
		t.Fatal("not annotated")
	}
	var text []string
	at := map[string]string{}
	for _, l := range lines {
		text = append(text, l.Text)
		for _, e := range l.Errors {
			at[e.Code] = l.Path + map[bool]string{true: " (elsewhere)"}[e.Elsewhere]
		}
	}
	// json.Indent of the compacted payload: the layout of the page.
	var compact, indented bytes.Buffer
	_ = json.Compact(&compact, raw)
	_ = json.Indent(&indented, compact.Bytes(), "", "  ")
	if got := strings.Join(text, "\n"); got != indented.String() {
		t.Errorf("lines:\n%s\nwant:\n%s", got, indented.String())
	}
	for code, path := range map[string]string{"too_big": "list.0.y.1", "bad": "s", "required": "list.1 (elsewhere)",
		"whole": "", "envelope": "", "object": "o"} {
		if at[code] != path {
			t.Errorf("%s at %q, want %q", code, at[code], path)
		}
	}
	for _, bad := range []string{`{"a": `, `not json`, `{} {}`, ``} {
		if _, ok := annotatePayload([]byte(bad), errs); ok {
			t.Errorf("%q annotated as JSON", bad)
		}
	}
}
