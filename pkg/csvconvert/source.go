package csvconvert

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"golang.org/x/text/transform"
)

// source reads one file a row at a time, in key order, with one row of
// look-ahead for the merge join. Rows that cannot take part in the join
// (bad CSV, no key, out of order) are reported and skipped here.
type source struct {
	e       *entity
	file    string // as reported
	r       *csv.Reader
	header  []string
	cols    []int // index of each of e.columns in a row
	joinIdx int   // root: key; child: account_key
	keyIdx  int   // own key, -1 if none
	parIdx  int   // parent_key, -1 if none
	grpIdx  int   // group_by, -1 if none
	numeric bool
	report  func(RowError)

	peeked   *row
	unsorted *RowError // first key out of order (or repeated root key)
	// Rows of a child file that could not be joined (no key, bad CSV):
	// each may belong to any account between its neighbours' keys.
	lost    []keyRange
	pending *keyRange // a lost row whose next key is not read yet
	last    string
	lastRow int
	rows    int // data rows read
}

type row struct {
	fields []string
	line   int
	lines  []int // line of each cell, only when the row spans lines
	key    string
}

func (r *row) lineOf(i int) int {
	if r.lines != nil && i < len(r.lines) {
		return r.lines[i]
	}
	return r.line
}

// Input is one file for Convert: the entity it is mapped as, the name used
// in error reports, and its contents.
type Input struct {
	Entity string
	Name   string
	R      io.Reader
}

func openSource(e *entity, in Input, numeric bool, report func(RowError)) (*source, error) {
	rd := in.R
	dec, err := decoderFor(e.csv.Encoding)
	if err != nil {
		return nil, err
	}
	if dec != nil {
		rd = transform.NewReader(rd, dec)
	}
	br := bufio.NewReaderSize(rd, 64<<10)
	// Spreadsheet programs start UTF-8 exports with a byte-order mark.
	if b, err := br.Peek(3); err == nil && string(b) == "\uFEFF" {
		_, _ = br.Discard(3)
	}
	r := csv.NewReader(br)
	r.Comma = []rune(e.csv.Delimiter)[0]
	r.LazyQuotes = e.csv.LazyQuotes != nil && *e.csv.LazyQuotes
	r.FieldsPerRecord = -1 // checked against the header here, to report and go on
	s := &source{e: e, file: in.Name, r: r, numeric: numeric, report: report, keyIdx: -1, parIdx: -1, grpIdx: -1}
	h, err := r.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty file, want a header line", in.Name)
		}
		return nil, fmt.Errorf("%s: header: %w", in.Name, err)
	}
	s.header = h
	idx := make(map[string]int, len(h))
	for i, name := range h {
		name = strings.TrimSpace(name)
		if _, dup := idx[name]; dup {
			idx[name] = -2 // ambiguous; an error only if the mapping uses it
			continue
		}
		idx[name] = i
	}
	find := func(name, what string) (int, error) {
		i, ok := idx[name]
		switch {
		case !ok:
			return 0, fmt.Errorf("%s:1: %s column %q is not in the header (%s)", in.Name, what, name, strings.Join(h, ", "))
		case i == -2:
			return 0, fmt.Errorf("%s:1: %s column %q appears twice in the header", in.Name, what, name)
		}
		return i, nil
	}
	join := e.Key
	if !e.root {
		join = e.AccountKey
	}
	if s.joinIdx, err = find(join, "key"); err != nil {
		return nil, err
	}
	for _, c := range []struct {
		name string
		dst  *int
		what string
	}{{e.Key, &s.keyIdx, "key"}, {e.ParentKey, &s.parIdx, "parent_key"}, {e.GroupBy, &s.grpIdx, "group_by"}} {
		if c.name == "" {
			continue
		}
		if *c.dst, err = find(c.name, c.what); err != nil {
			return nil, err
		}
	}
	for _, c := range e.columns {
		i, err := find(c.name, "mapped")
		if err != nil {
			return nil, err
		}
		s.cols = append(s.cols, i)
	}
	return s, nil
}

// peek returns the next row that can be joined, nil at the end.
func (s *source) peek() (*row, error) {
	for s.peeked == nil {
		r, err := s.read()
		if err != nil || r == nil {
			return nil, err
		}
		if s.accept(r) {
			s.peeked = r
		}
	}
	return s.peeked, nil
}

func (s *source) advance() { s.peeked = nil }

// read returns the next well-formed row, reporting malformed ones.
func (s *source) read() (*row, error) {
	for {
		fields, err := s.r.Read()
		if errors.Is(err, io.EOF) {
			if s.pending != nil {
				s.pending.hiOpen = true
				s.lost, s.pending = append(s.lost, *s.pending), nil
			}
			return nil, nil
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			s.rows++
			s.report(RowError{File: s.file, Line: pe.StartLine, Reason: "not valid CSV: " + pe.Err.Error() + fmt.Sprintf(" (line %d, byte %d)", pe.Line, pe.Column)})
			s.unjoinable(pe.StartLine)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.file, err)
		}
		s.rows++
		line, _ := s.r.FieldPos(0)
		r := &row{fields: fields, line: line}
		if last, _ := s.r.FieldPos(len(fields) - 1); last != line {
			r.lines = make([]int, len(fields))
			for i := range fields {
				r.lines[i], _ = s.r.FieldPos(i)
			}
		}
		if len(fields) != len(s.header) {
			if len(fields) == 1 && strings.TrimSpace(fields[0]) == "" {
				continue // a blank line, as trailing ones often are
			}
			s.report(RowError{File: s.file, Line: line, Reason: fmt.Sprintf("has %d fields, the header has %d", len(fields), len(s.header))})
			s.unjoinable(line)
			continue
		}
		return r, nil
	}
}

// accept checks the join key: present, well-formed, in order.
func (s *source) accept(r *row) bool {
	key := strings.TrimSpace(r.fields[s.joinIdx])
	bad := func(reason string) bool {
		s.report(RowError{File: s.file, Line: r.lineOf(s.joinIdx), Column: s.joinIdx + 1, ColumnName: s.header[s.joinIdx], Reason: reason})
		s.unjoinable(r.lineOf(s.joinIdx))
		return false
	}
	if key == "" {
		return bad("missing key")
	}
	if s.numeric && !digits(key) {
		return bad(fmt.Sprintf("key %q is not a number (key_order: numeric)", key))
	}
	r.key = key
	// Out of order stops the run (UnsortedError), it is not one bad row:
	// the merge join has already passed the account this row belongs to,
	// which would be written without it.
	unsorted := func(reason string) bool {
		if s.unsorted == nil {
			s.unsorted = &RowError{File: s.file, Line: r.lineOf(s.joinIdx), Column: s.joinIdx + 1, ColumnName: s.header[s.joinIdx], Reason: reason}
		}
		return false
	}
	if s.lastRow > 0 {
		switch c := compareKeys(key, s.last, s.numeric); {
		case c < 0:
			return unsorted(fmt.Sprintf("key %q comes after %q (line %d): the file must be sorted by this column", key, s.last, s.lastRow))
		case c == 0 && s.e.root:
			return unsorted(fmt.Sprintf("duplicate account key %q (first at line %d)", key, s.lastRow))
		}
	}
	if s.lastRow == 0 || s.last != key {
		s.last, s.lastRow = key, r.line
	}
	if s.pending != nil {
		s.pending.hi = key
		s.lost, s.pending = append(s.lost, *s.pending), nil
	}
	return true
}

// keyRange is where a lost row of a sorted child file may belong: any
// account from the key before it to the key after it (open at the file's
// start or end).
type keyRange struct {
	lo, hi         string
	loOpen, hiOpen bool
	line           int // the first lost row's line
}

// unjoinable notes a child row that joins no account: the accounts it may
// have belonged to are left out (lostRow) rather than written without it.
// A root row that cannot be joined is simply not an account.
func (s *source) unjoinable(line int) {
	if s.e.root || s.pending != nil {
		return
	}
	s.pending = &keyRange{lo: s.last, loOpen: s.lastRow == 0, line: line}
}

// lostRow is the error that leaves account key out when a lost row of the
// file may be one of its rows. Ranges wholly before key are dropped: the
// join only moves forward.
func (s *source) lostRow(key string) (RowError, bool) {
	for len(s.lost) > 0 && !s.lost[0].hiOpen && compareKeys(s.lost[0].hi, key, s.numeric) < 0 {
		s.lost = s.lost[1:]
	}
	for _, k := range s.lost {
		if (k.loOpen || compareKeys(k.lo, key, s.numeric) <= 0) && (k.hiOpen || compareKeys(key, k.hi, s.numeric) <= 0) {
			return RowError{File: s.file, Line: k.line, Account: key,
				Reason: "left out: the row at this line joins no account (reported above) and may be one of this account's"}, true
		}
	}
	return RowError{}, false
}

// compareKeys orders keys as the files must be sorted: byte order (as
// `LC_ALL=C sort`, or ORDER BY … COLLATE "C"), or as whole numbers.
func compareKeys(a, b string, numeric bool) int {
	if numeric {
		a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
		if len(a) != len(b) {
			return len(a) - len(b)
		}
	}
	return strings.Compare(a, b)
}

// UnsortedError stops a run whose files are not sorted by their account
// key (or whose accounts file repeats a key): the merge join would build
// accounts without some of their rows. Rows holds the first offending row
// of each such file.
type UnsortedError struct{ Rows []RowError }

func (e *UnsortedError) Error() string {
	var b strings.Builder
	for _, r := range e.Rows {
		b.WriteString(r.String() + "\n")
	}
	b.WriteString("not sorted by the account key: nothing converted; sort the files (see CONVERT.md, \"Joining files\")")
	return b.String()
}

// checkOrder reads every seekable input once, before anything is
// converted, and rewinds it: an unsorted file is refused with nothing
// written. Inputs that cannot seek (pipes) are checked as the join reads
// them, which stops the run at the first key out of order.
func (m *Mapping) checkOrder(ctx context.Context, inputs []Input) error {
	var bad []RowError
	for _, in := range inputs {
		rs, ok := in.R.(io.ReadSeeker)
		if !ok {
			continue
		}
		pos, err := rs.Seek(0, io.SeekCurrent)
		if err != nil {
			continue // not a seekable file after all
		}
		i := m.entityIndex(in.Entity)
		if i < 0 {
			continue // Convert reports it
		}
		s, err := openSource(m.entities[i], in, m.numeric, func(RowError) {})
		if err == nil {
			s.r.ReuseRecord = true // rows are dropped at once; keys are fresh strings
			for s.unsorted == nil {
				if err = ctx.Err(); err != nil {
					return err
				}
				r, rerr := s.peek()
				if rerr != nil {
					return rerr
				}
				if r == nil {
					break
				}
				s.advance()
			}
			if s.unsorted != nil {
				bad = append(bad, *s.unsorted)
			}
		}
		if _, err := rs.Seek(pos, io.SeekStart); err != nil {
			return fmt.Errorf("%s: rewind after the order check: %w", in.Name, err)
		}
	}
	if len(bad) > 0 {
		return &UnsortedError{Rows: bad}
	}
	return nil
}

// unsortedIn is the UnsortedError of the sources, if one has met a key out
// of order.
func unsortedIn(srcs []*source) error {
	var bad []RowError
	for _, s := range srcs {
		if s.unsorted != nil {
			bad = append(bad, *s.unsorted)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return &UnsortedError{Rows: bad}
}
