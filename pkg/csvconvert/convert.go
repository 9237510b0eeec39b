package csvconvert

import (
	"context"
	"fmt"
	"strings"
)

// Account is one converted account: its JSON (one line, no newline) and
// where its root row was.
type Account struct {
	Key  string
	File string
	Line int
	JSON []byte
}

// Stats summarise a run.
type Stats struct {
	Rows      int // data rows read, all files
	Accounts  int // root rows that took part in the join
	Converted int // accounts written
	Failed    int // accounts not written because one of their rows failed
	Errors    int // row errors reported (orphans and unjoinable rows included)
}

// Convert merge-joins the inputs (one per entity of the mapping) and calls
// emit for each account whose rows all mapped, in the accounts file's
// order. Every row that cannot be mapped goes to report; an account with
// any such row is left out whole (a partial account could import cleanly
// and lose, say, a meter). Files must be sorted by their join key (see
// CONVERT.md), so memory holds one account's rows, never a file.
// The error is for what stops the run: a missing file or column, a read
// error, ctx, or emit failing.
func (m *Mapping) Convert(ctx context.Context, inputs []Input, emit func(Account) error, report func(RowError)) (st Stats, err error) {
	counted := func(e RowError) { st.Errors++; report(e) }
	if err := m.checkOrder(ctx, inputs); err != nil {
		return st, err
	}
	srcs := make([]*source, len(m.entities))
	for _, in := range inputs {
		i := m.entityIndex(in.Entity)
		if i < 0 {
			return st, fmt.Errorf("no entity %q in the mapping", in.Entity)
		}
		if srcs[i] != nil {
			return st, fmt.Errorf("entity %s given twice", in.Entity)
		}
		s, err := openSource(m.entities[i], in, m.numeric, counted)
		if err != nil {
			return st, err
		}
		srcs[i] = s
	}
	for i, s := range srcs {
		if s == nil {
			return st, fmt.Errorf("no file given for entity %s", m.entities[i].Entity)
		}
	}
	defer func() {
		for _, s := range srcs {
			st.Rows += s.rows
		}
	}()
	var r *row
	root, children := srcs[0], srcs[1:]
	group := make([][]*row, len(children))
	sizeHint := 1024
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		r, err = root.peek()
		if err != nil {
			return st, err
		}
		if r == nil {
			break
		}
		root.advance()
		st.Accounts++
		for i, c := range children {
			if group[i], err = c.take(r.key, root.file, counted); err != nil {
				return st, err
			}
		}
		if err := unsortedIn(srcs); err != nil {
			return st, err
		}
		a := m.build(root, r, children, group)
		for _, c := range children {
			if e, lost := c.lostRow(r.key); lost {
				a.errs = append(a.errs, e)
			}
		}
		if len(a.errs) > 0 {
			st.Failed++
			for _, e := range a.errs {
				counted(e)
			}
			continue
		}
		// Sized like the previous account: accounts of one export are alike.
		js := appendJSON(make([]byte, 0, sizeHint+sizeHint/4), a.obj)
		sizeHint = len(js)
		if err := emit(Account{Key: r.key, File: root.file, Line: r.line, JSON: js}); err != nil {
			return st, err
		}
		st.Converted++
	}
	for _, c := range children {
		if _, err := c.take("", root.file, counted); err != nil {
			return st, err
		}
	}
	return st, unsortedIn(srcs)
}

func (m *Mapping) entityIndex(name string) int {
	for i, e := range m.entities {
		if e.Entity == name {
			return i
		}
	}
	return -1
}

// take returns the rows joined to account key, reporting the rows before
// them as orphans. key "" drains the file.
func (s *source) take(key, rootFile string, report func(RowError)) ([]*row, error) {
	var out []*row
	for {
		r, err := s.peek()
		if err != nil || r == nil {
			return out, err
		}
		c := -1
		if key != "" {
			c = compareKeys(r.key, key, s.numeric)
		}
		switch {
		case c > 0:
			return out, nil
		case c == 0:
			out = append(out, r)
		default:
			report(RowError{File: s.file, Line: r.lineOf(s.joinIdx), Column: s.joinIdx + 1, ColumnName: s.header[s.joinIdx],
				Reason: fmt.Sprintf("orphan: no account %q in %s (both files must be sorted by the key)", r.key, rootFile)})
		}
		s.advance()
	}
}

// keyed is an element its children can refer to by key.
type keyed struct {
	obj   object
	group string // group_by value it was merged under, "" if none
	line  int
}

type built struct {
	obj  object
	errs []RowError
}

// build assembles one account from its root row and its children's rows.
func (m *Mapping) build(root *source, r *row, children []*source, groups [][]*row) built {
	b := built{obj: object{}}
	b.fill(root, r, b.obj)
	// Elements by entity and own key, for their children's parent_key; and
	// grouped elements by entity, parent and group value.
	byKey := make(map[*entity]map[string]keyed)
	grouped := map[string]object{}
	for i, s := range children {
		e := s.e
		for _, cr := range groups[i] {
			parent, parentKey := b.obj, ""
			if e.parent != nil {
				parentKey = strings.TrimSpace(cr.fields[s.parIdx])
				p, ok := byKey[e.parent][parentKey]
				if !ok || p.obj == nil {
					b.errs = append(b.errs, s.cellErr(cr, s.parIdx, "", fmt.Sprintf("orphan: no %s with key %q in this account", e.parent.Entity, parentKey)))
					continue
				}
				parent = p.obj
			}
			var elem object
			gk := ""
			if s.grpIdx >= 0 {
				gk = fmt.Sprintf("%d\x00%s\x00%s", e.pos, parentKey, strings.TrimSpace(cr.fields[s.grpIdx]))
				elem = grouped[gk]
			}
			fresh := elem == nil
			if fresh {
				elem = object{}
			}
			b.fill(s, cr, elem)
			if fresh {
				holder, name := arrayAt(parent, e.steps)
				arr, _ := holder[name].([]any)
				holder[name] = append(arr, elem)
				if gk != "" {
					grouped[gk] = elem
				}
			}
			if s.keyIdx >= 0 {
				k := strings.TrimSpace(cr.fields[s.keyIdx])
				if byKey[e] == nil {
					byKey[e] = map[string]keyed{}
				}
				switch prev, dup := byKey[e][k]; {
				case k == "":
					b.errs = append(b.errs, s.cellErr(cr, s.keyIdx, "", "missing key"))
				case dup && (gk == "" || prev.group != gk):
					b.errs = append(b.errs, s.cellErr(cr, s.keyIdx, "", fmt.Sprintf("duplicate %s key %q in this account (first at line %d; group_by merges rows)", e.Entity, k, prev.line)))
				case !dup:
					byKey[e][k] = keyed{obj: elem, group: gk, line: cr.line}
				}
			}
		}
	}
	return b
}

// fill maps a row's cells and the entity's constants into o.
func (b *built) fill(s *source, r *row, o object) {
	for i, c := range s.e.columns {
		idx := s.cols[i]
		v, present, reason := c.value(r.fields[idx])
		if reason != "" {
			b.errs = append(b.errs, s.cellErr(r, idx, c.full, reason))
			continue
		}
		if !present {
			continue
		}
		if old, ok := set(o, c.steps, v, false); !ok && old != nil {
			b.errs = append(b.errs, s.cellErr(r, idx, c.full, fmt.Sprintf("%s differs from %s in an earlier row of the same group", compact(v), compact(old))))
		}
	}
	for _, k := range s.e.constants {
		set(o, k.steps, k.value, true)
	}
}

func (s *source) cellErr(r *row, idx int, path, reason string) RowError {
	return RowError{File: s.file, Line: r.lineOf(idx), Column: idx + 1, ColumnName: s.header[idx], Path: path,
		Account: strings.TrimSpace(r.fields[s.joinIdx]), Reason: reason}
}
