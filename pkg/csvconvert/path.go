package csvconvert

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// A path names a field of the account, relative to the object a row fills:
// dot-separated wire names, an array element by index ("customers[0].email",
// "line_items[0].units[1]"). Entity paths (where a child file's rows go)
// use "[]" for "each element of": "supply_addresses[].meter_points".

const (
	noIndex   = -1
	eachIndex = -2
)

type step struct {
	name  string
	index int // noIndex, eachIndex or an element index
}

// maxIndex bounds explicit indexes: the account's arrays are capped far
// lower, and an index must not let one cell allocate a huge array.
const maxIndex = 999

func parsePath(s string, allowEach bool) ([]step, error) {
	if s == "" {
		return nil, fmt.Errorf("empty path")
	}
	var steps []step
	for part := range strings.SplitSeq(s, ".") {
		name, rest, hasIndex := strings.Cut(part, "[")
		st := step{name: name, index: noIndex}
		if name == "" {
			return nil, fmt.Errorf("path %q: empty field name", s)
		}
		if hasIndex {
			idx, ok := strings.CutSuffix(rest, "]")
			switch {
			case !ok:
				return nil, fmt.Errorf("path %q: %q is not name[index]", s, part)
			case idx == "" && allowEach:
				st.index = eachIndex
			case idx == "":
				return nil, fmt.Errorf("path %q: [] is only for a file's path; give an index", s)
			default:
				n, err := strconv.Atoi(idx)
				if err != nil || n < 0 || n > maxIndex || (allowEach && n >= 0) {
					return nil, fmt.Errorf("path %q: bad index %q", s, idx)
				}
				st.index = n
			}
		}
		steps = append(steps, st)
	}
	return steps, nil
}

func formatPath(steps []step) string {
	var b strings.Builder
	for i, st := range steps {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(st.name)
		switch {
		case st.index == eachIndex:
			b.WriteString("[]")
		case st.index >= 0:
			fmt.Fprintf(&b, "[%d]", st.index)
		}
	}
	return b.String()
}

// resolve walks steps from n and returns the node they lead to.
func resolve(n *node, steps []step) (*node, error) {
	for i, st := range steps {
		if n.kind != kindObject {
			return nil, fmt.Errorf("%s is %s, it has no field %q", formatPath(steps[:i]), n.kind.article(), st.name)
		}
		c, ok := n.fields[st.name]
		if !ok {
			where := "the object"
			if i > 0 {
				where = formatPath(steps[:i])
			}
			return nil, fmt.Errorf("%s has no field %q (fields: %s)", where, st.name, n.fieldNames())
		}
		n = c
		if st.index != noIndex {
			if n.kind != kindArray {
				return nil, fmt.Errorf("%s is %s, not an array", formatPath(steps[:i+1]), n.kind.article())
			}
			n = n.elem
		}
	}
	return n, nil
}

// The tree a row is built into: map[string]any objects, []any arrays (nil
// holes until compacted) and json.RawMessage scalars, already encoded.
type object = map[string]any

// set stores v at steps under o. It reports the value already there when
// it differs (grouped rows disagreeing). With onlyExisting, it never
// creates an array element: constants only complete elements that cells
// created, so a constant cannot conjure an element out of empty cells.
func set(o object, steps []step, v json.RawMessage, onlyExisting bool) (conflict json.RawMessage, done bool) {
	cur := o
	for i, st := range steps {
		last := i == len(steps)-1
		if st.index == noIndex {
			if last {
				return store(cur, st.name, v)
			}
			next, _ := cur[st.name].(object)
			if next == nil {
				next = object{}
				cur[st.name] = next
			}
			cur = next
			continue
		}
		arr, _ := cur[st.name].([]any)
		if st.index >= len(arr) {
			if onlyExisting {
				return nil, false
			}
			arr = append(arr, make([]any, st.index+1-len(arr))...)
			cur[st.name] = arr
		}
		if last {
			if old, ok := arr[st.index].(json.RawMessage); ok && string(old) != string(v) {
				return old, false
			}
			arr[st.index] = v
			return nil, true
		}
		next, _ := arr[st.index].(object)
		if next == nil {
			if onlyExisting {
				return nil, false
			}
			next = object{}
			arr[st.index] = next
		}
		cur = next
	}
	return nil, false
}

func store(o object, name string, v json.RawMessage) (json.RawMessage, bool) {
	if old, ok := o[name].(json.RawMessage); ok && string(old) != string(v) {
		return old, false
	}
	o[name] = v
	return nil, true
}

// arrayAt returns (creating objects on the way) the object holding the
// array named by the last of steps, all plain names.
func arrayAt(o object, steps []step) (holder object, name string) {
	for _, st := range steps[:len(steps)-1] {
		next, _ := o[st.name].(object)
		if next == nil {
			next = object{}
			o[st.name] = next
		}
		o = next
	}
	return o, steps[len(steps)-1].name
}
