package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// payloadLine is one line of a payload shown indented, with the field
// errors whose attr names the value that starts on it.
type payloadLine struct {
	Text   string // indented, as json.Indent would print it
	Path   string // the attr of the value starting here ("" for the root and closing brackets)
	Errors []lineError
}

// lineError is a field error shown at a line; Elsewhere is set when its
// attr is not in the payload (a required field left out) and it is shown
// at the nearest enclosing value instead.
type lineError struct {
	dataimport.FieldError
	Elsewhere bool
}

// annotatePayload prints raw indented, one value per line, and puts each
// field error at the line of the value its attr names (attrs are paths
// like supply_addresses.0.meter_points.0.mpxn). ok is false when raw is
// not JSON: the page then shows it as it is, with the errors apart.
func annotatePayload(raw []byte, errs []dataimport.FieldError) (lines []payloadLine, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // numbers as sent, not through float64
	w := &payloadWalker{dec: dec, at: map[string]int{}}
	if err := w.value("", "", 0); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false // trailing data
	}
	for _, fe := range errs {
		path, elsewhere := fe.Attr, false
		if path == dataimport.CodeNonFieldErrors {
			path = ""
		}
		for {
			if i, found := w.at[path]; found {
				w.lines[i].Errors = append(w.lines[i].Errors, lineError{FieldError: fe, Elsewhere: elsewhere})
				break
			}
			elsewhere = true
			cut := strings.LastIndexByte(path, '.')
			if cut < 0 {
				path = ""
			} else {
				path = path[:cut]
			}
		}
	}
	return w.lines, true
}

type payloadWalker struct {
	dec   *json.Decoder
	lines []payloadLine
	at    map[string]int // attr → its line
}

// value prints the next value at depth, prefixed (a key), as path.
func (w *payloadWalker) value(path, prefix string, depth int) error {
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	indent := strings.Repeat("  ", depth)
	if _, seen := w.at[path]; !seen {
		w.at[path] = len(w.lines)
	}
	d, isDelim := tok.(json.Delim)
	if !isDelim {
		w.lines = append(w.lines, payloadLine{Text: indent + prefix + scalar(tok), Path: path})
		return nil
	}
	open, closing := string(d), "]"
	if d == '{' {
		closing = "}"
	}
	first := len(w.lines)
	w.lines = append(w.lines, payloadLine{Text: indent + prefix + open, Path: path})
	n := 0
	for w.dec.More() {
		child, childPrefix := path, ""
		if d == '{' {
			k, err := w.dec.Token()
			if err != nil {
				return err
			}
			key, _ := k.(string)
			child, childPrefix = join(path, key), scalar(key)+": "
		} else {
			child = join(path, strconv.Itoa(n))
		}
		if err := w.value(child, childPrefix, depth+1); err != nil {
			return err
		}
		if w.dec.More() {
			w.lines[len(w.lines)-1].Text += ","
		}
		n++
	}
	if _, err := w.dec.Token(); err != nil { // the closing bracket
		return err
	}
	if n == 0 {
		w.lines[first].Text += closing
		return nil
	}
	w.lines = append(w.lines, payloadLine{Text: indent + closing})
	return nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// scalar prints a JSON scalar as it was sent (strings re-quoted, without
// escaping HTML: the template escapes the page).
func scalar(v any) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case json.Number:
		return t.String()
	case bool:
		return strconv.FormatBool(t)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(buf.String(), "\n")
}
