package csvconvert

import (
	"encoding/json"
	"slices"
)

// appendJSON writes the tree as compact JSON with sorted keys (a stable
// output, diffable between runs) and without the holes left by indexed
// elements whose cells were all empty.
func appendJSON(b []byte, v any) []byte {
	switch v := v.(type) {
	case json.RawMessage:
		return append(b, v...)
	case object:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			// Keys are the account's wire names, checked against the
			// schema when the mapping was loaded: plain ASCII.
			b = append(b, '"')
			b = append(b, k...)
			b = append(b, '"', ':')
			b = appendJSON(b, v[k])
		}
		return append(b, '}')
	case []any:
		b = append(b, '[')
		first := true
		for _, e := range v {
			if e == nil {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendJSON(b, e)
		}
		return append(b, ']')
	}
	return append(b, "null"...)
}
