// Package csvconvert turns flat CSV exports of a legacy billing system (one
// file per entity, joined on key columns) into account objects of the
// data-import API, one JSON line per account. The mapping format is
// documented in cmd/migrator/CONVERT.md.
package csvconvert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
)

// The YAML mapping, as written. Compile turns it into a Mapping.
type (
	mappingFile struct {
		CSV      CSVOptions    `yaml:"csv"`
		KeyOrder string        `yaml:"key_order"`
		Formats  Formats       `yaml:"formats"`
		Files    []FileMapping `yaml:"files"`
	}

	// CSVOptions describe how a file is written.
	CSVOptions struct {
		Delimiter  string `yaml:"delimiter"`
		Encoding   string `yaml:"encoding"`
		LazyQuotes *bool  `yaml:"lazy_quotes"`
	}

	// Formats say how cells are read; each level (mapping, file, column)
	// overrides the one above it.
	Formats struct {
		Date               []string `yaml:"date"`
		DateTime           []string `yaml:"datetime"`
		TimeZone           string   `yaml:"timezone"`
		DecimalSeparator   string   `yaml:"decimal_separator"`
		ThousandsSeparator *string  `yaml:"thousands_separator"`
		True               []string `yaml:"true_values"`
		False              []string `yaml:"false_values"`
		Absent             []string `yaml:"absent"`
		Trim               *bool    `yaml:"trim"`
	}

	// FileMapping is one input file: the root accounts file (no path) or a
	// child entity whose rows become elements of the array at path.
	FileMapping struct {
		Entity     string                `yaml:"entity"`
		File       string                `yaml:"file"`
		Path       string                `yaml:"path"`
		Key        string                `yaml:"key"`
		AccountKey string                `yaml:"account_key"`
		ParentKey  string                `yaml:"parent_key"`
		GroupBy    string                `yaml:"group_by"`
		CSV        *CSVOptions           `yaml:"csv"`
		Formats    Formats               `yaml:"formats"`
		Columns    map[string]columnList `yaml:"columns"`
		Constants  map[string]any        `yaml:"constants"`
	}

	// ColumnSpec maps one column to one field.
	ColumnSpec struct {
		Path     string            `yaml:"path"`
		Map      map[string]string `yaml:"map"`
		Required bool              `yaml:"required"`
		Formats  `yaml:",inline"`
	}
)

// columnList is what a column maps to: a path, a spec, or a list of them
// (one column feeding several fields).
type columnList []ColumnSpec

type plainSpec ColumnSpec

func (l *columnList) UnmarshalYAML(unmarshal func(any) error) error {
	var path string
	if err := unmarshal(&path); err == nil {
		*l = columnList{{Path: path}}
		return nil
	}
	var items []any
	if err := unmarshal(&items); err == nil {
		for _, it := range items {
			b, err := yaml.Marshal(it)
			if err != nil {
				return err
			}
			var one columnList
			if err := yaml.UnmarshalWithOptions(b, &one, yaml.Strict()); err != nil {
				return err
			}
			*l = append(*l, one...)
		}
		return nil
	}
	var s plainSpec
	if err := unmarshal(&s); err != nil {
		return err
	}
	*l = columnList{ColumnSpec(s)}
	return nil
}

// Mapping is a loaded, checked mapping.
type Mapping struct {
	entities []*entity // root first, parents before children
	numeric  bool      // key_order: numeric
}

// entity is one file's compiled mapping.
type entity struct {
	FileMapping
	csv       CSVOptions
	root      bool
	steps     []step  // array path relative to the parent's element
	parent    *entity // nil for root and for arrays of the account itself
	elem      *node
	columns   []*column
	constants []constant
	pos       int // index in Mapping.entities
}

type constant struct {
	path  string
	steps []step
	value json.RawMessage
}

// Entities lists the entity names and expected file names, in mapping order
// (root first), for matching command-line arguments.
func (m *Mapping) Entities() []FileMapping {
	out := make([]FileMapping, len(m.entities))
	for i, e := range m.entities {
		out[i] = e.FileMapping
	}
	return out
}

// Load parses and checks a YAML mapping against the account's shape.
func Load(src []byte) (*Mapping, error) {
	var generic any
	if err := yaml.Unmarshal(src, &generic); err != nil {
		return nil, fmt.Errorf("mapping: %s", yaml.FormatError(err, false, true))
	}
	if err := checkKeys(generic, ""); err != nil {
		return nil, fmt.Errorf("mapping: %w", err)
	}
	var mf mappingFile
	if err := yaml.UnmarshalWithOptions(src, &mf, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("mapping: %s", yaml.FormatError(err, false, true))
	}
	return compile(&mf)
}

func compile(mf *mappingFile) (*Mapping, error) {
	m := &Mapping{}
	switch mf.KeyOrder {
	case "", "text":
	case "numeric":
		m.numeric = true
	default:
		return nil, fmt.Errorf("mapping: key_order %q: want text or numeric", mf.KeyOrder)
	}
	if len(mf.Files) == 0 {
		return nil, errors.New("mapping: no files")
	}
	byPath := map[string]*entity{}
	names := map[string]bool{}
	var roots, children []*entity
	for i := range mf.Files {
		fm := mf.Files[i]
		e := &entity{FileMapping: fm, csv: mergeCSV(mf.CSV, fm.CSV)}
		if fm.Entity == "" {
			return nil, fmt.Errorf("mapping: files[%d]: entity (a name for the file) is required", i)
		}
		if names[fm.Entity] {
			return nil, fmt.Errorf("mapping: entity %q given twice", fm.Entity)
		}
		names[fm.Entity] = true
		if err := checkCSV(e.csv); err != nil {
			return nil, fmt.Errorf("mapping: entity %s: %w", fm.Entity, err)
		}
		if fm.Path == "" {
			e.root = true
			roots = append(roots, e)
		} else {
			children = append(children, e)
			byPath[fm.Path] = e
		}
	}
	if len(roots) != 1 {
		return nil, fmt.Errorf("mapping: want exactly one root file (without path), found %d", len(roots))
	}
	root := roots[0]
	if root.Key == "" {
		return nil, fmt.Errorf("mapping: root entity %s: key (the account key column) is required", root.Entity)
	}
	if root.AccountKey != "" || root.ParentKey != "" || root.GroupBy != "" {
		return nil, fmt.Errorf("mapping: root entity %s: account_key, parent_key and group_by are for child files", root.Entity)
	}
	root.elem = accountSchema
	for _, e := range children {
		if err := linkChild(e, byPath); err != nil {
			return nil, fmt.Errorf("mapping: entity %s: %w", e.Entity, err)
		}
	}
	// Parents before children: by depth, then mapping order.
	slices.SortStableFunc(children, func(a, b *entity) int { return depth(a) - depth(b) })
	m.entities = append([]*entity{root}, children...)
	for i, e := range m.entities {
		e.pos = i
		if err := compileEntity(e, mf.Formats, m.entities); err != nil {
			return nil, fmt.Errorf("mapping: entity %s: %w", e.Entity, err)
		}
	}
	return m, nil
}

func depth(e *entity) int {
	if e.parent == nil {
		return 0
	}
	return 1 + depth(e.parent)
}

// linkChild finds the element shape of a child file's rows and its parent
// entity: "a[].b" is a child of the file at "a".
func linkChild(e *entity, byPath map[string]*entity) error {
	steps, err := parsePath(e.Path, true)
	if err != nil {
		return err
	}
	if e.AccountKey == "" {
		return errors.New("account_key (the column with the account key) is required: files are joined on it")
	}
	cut := -1
	for i, st := range steps {
		if st.index == eachIndex {
			cut = i
		}
	}
	if steps[len(steps)-1].index != noIndex {
		return fmt.Errorf("path %q must end with the array's name", e.Path)
	}
	parentElem := accountSchema
	if cut >= 0 {
		pp := formatPath(steps[:cut+1])
		pp = strings.TrimSuffix(pp, "[]")
		p, ok := byPath[pp]
		if !ok {
			return fmt.Errorf("path %q: no file maps the parent array %q", e.Path, pp)
		}
		if p.Key == "" {
			return fmt.Errorf("path %q: the parent file (entity %s) needs a key for parent_key to refer to", e.Path, p.Entity)
		}
		if e.ParentKey == "" {
			return fmt.Errorf("parent_key (the column with the %s key) is required", p.Entity)
		}
		e.parent = p
		steps = steps[cut+1:]
		if err := linkChild(p, byPath); err != nil && p.elem == nil {
			return err
		}
		parentElem = p.elem
	} else if e.ParentKey != "" {
		return errors.New("parent_key is only for nested arrays (path with []); the account key joins this file")
	}
	for _, st := range steps {
		if st.index != noIndex {
			return fmt.Errorf("path %q: only plain field names after the last []", e.Path)
		}
	}
	arr, err := resolve(parentElem, steps)
	if err != nil {
		return fmt.Errorf("path %q: %w", e.Path, err)
	}
	if arr.kind != kindArray || arr.elem.kind != kindObject {
		return fmt.Errorf("path %q is not an array of objects", e.Path)
	}
	e.steps, e.elem = steps, arr.elem
	return nil
}

func compileEntity(e *entity, top Formats, all []*entity) error {
	base, err := resolveFormats(defaultFormats(), top)
	if err != nil {
		return err
	}
	fileF, err := resolveFormats(base, e.Formats)
	if err != nil {
		return err
	}
	seen := map[string]string{}
	claim := func(path, what string) error {
		if prev, ok := seen[path]; ok {
			return fmt.Errorf("%s and %s both set %s", prev, what, path)
		}
		seen[path] = what
		for _, c := range all {
			if c.parent == e || (e.root && !c.root && c.parent == nil) {
				arr := formatPath(c.steps)
				if path == arr || strings.HasPrefix(path, arr+".") || strings.HasPrefix(path, arr+"[") {
					return fmt.Errorf("%s sets %s, inside the array filled by file %s", what, path, c.Entity)
				}
			}
		}
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(e.Columns)) {
		for _, spec := range e.Columns[name] {
			steps, err := parsePath(spec.Path, false)
			if err != nil {
				return fmt.Errorf("column %s: %w", name, err)
			}
			n, err := resolve(e.elem, steps)
			if err != nil {
				return fmt.Errorf("column %s: %w", name, err)
			}
			if !n.kind.scalar() {
				return fmt.Errorf("column %s: %s is %s; map a column to each of its fields", name, spec.Path, n.kind.article())
			}
			f, err := resolveFormats(fileF, spec.Formats)
			if err != nil {
				return fmt.Errorf("column %s: %w", name, err)
			}
			if err := claim(spec.Path, "column "+name); err != nil {
				return err
			}
			full := spec.Path
			if !e.root {
				full = e.Path + "[]." + spec.Path
			}
			e.columns = append(e.columns, &column{name: name, path: spec.Path, full: full, steps: steps, kind: n.kind,
				required: spec.Required, valueMap: spec.Map, f: f})
		}
	}
	for _, p := range slices.Sorted(maps.Keys(e.Constants)) {
		steps, err := parsePath(p, false)
		if err != nil {
			return fmt.Errorf("constant: %w", err)
		}
		n, err := resolve(e.elem, steps)
		if err != nil {
			return fmt.Errorf("constant %s: %w", p, err)
		}
		v, err := constantValue(n.kind, e.Constants[p])
		if err != nil {
			return fmt.Errorf("constant %s: %w", p, err)
		}
		if err := claim(p, "constant "+p); err != nil {
			return err
		}
		e.constants = append(e.constants, constant{path: p, steps: steps, value: v})
	}
	if len(e.columns) == 0 && len(e.constants) == 0 {
		return errors.New("maps no column and no constant")
	}
	return nil
}

// constantValue encodes a YAML scalar as the field's JSON value, checked the
// same way a cell would be (dates as YYYY-MM-DD, decimals with a dot).
func constantValue(k kind, v any) (json.RawMessage, error) {
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case bool:
		if k != kindBool {
			return nil, fmt.Errorf("a boolean for %s field", k.article())
		}
		return json.Marshal(v)
	case uint64, int64, int, float64:
		s = fmt.Sprint(v)
	default:
		return nil, fmt.Errorf("want a single value for %s field, got %T", k.article(), v)
	}
	c := &column{kind: k, f: formats{dates: []string{"2006-01-02"}, dateNames: []string{"YYYY-MM-DD"},
		dateTimes: []string{"2006-01-02T15:04:05Z"}, dateTimeNms: []string{"YYYY-MM-DDTHH:mm:ssZ"},
		decimalSep: ".", trueSet: map[string]bool{"true": true}, falseSet: map[string]bool{"false": true}}}
	c.f.loc = defaultFormats().loc
	out, present, reason := c.value(s)
	if reason != "" || !present {
		if reason == "" {
			reason = "is empty"
		}
		return nil, fmt.Errorf("%q: value %s", s, reason)
	}
	return out, nil
}

// checkKeys refuses the keys true, false and null outside value maps:
// go-yaml (v1.19) reads such a key as a boolean and then silently leaves the
// whole enclosing section empty instead of calling it unknown.
func checkKeys(v any, parent string) error {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			if parent != "map" {
				switch strings.ToLower(k) {
				case "true", "false", "null", "~":
					return fmt.Errorf("key %q is not part of the format (for cell values use true_values, false_values)", k)
				}
			}
			if err := checkKeys(c, k); err != nil {
				return err
			}
		}
	case []any:
		for _, c := range v {
			if err := checkKeys(c, parent); err != nil {
				return err
			}
		}
	}
	return nil
}

func mergeCSV(top CSVOptions, file *CSVOptions) CSVOptions {
	out := top
	if file != nil {
		if file.Delimiter != "" {
			out.Delimiter = file.Delimiter
		}
		if file.Encoding != "" {
			out.Encoding = file.Encoding
		}
		if file.LazyQuotes != nil {
			out.LazyQuotes = file.LazyQuotes
		}
	}
	if out.Delimiter == "" {
		out.Delimiter = ","
	}
	return out
}

func checkCSV(o CSVOptions) error {
	d := []rune(o.Delimiter)
	if len(d) != 1 || d[0] == '"' || d[0] == '\r' || d[0] == '\n' {
		return fmt.Errorf("csv.delimiter %q: want one character (\\t for tab)", o.Delimiter)
	}
	if _, err := decoderFor(o.Encoding); err != nil {
		return err
	}
	return nil
}

func mapKeys(m map[string]string) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}

func setKeys(m map[string]bool) string {
	return strings.Join(slices.Sorted(maps.Keys(m)), ", ")
}

// compact returns JSON of v for messages.
func compact(v json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}
