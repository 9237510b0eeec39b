package csvconvert

import (
	"bufio"
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

	peeked  *row
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
			return nil, nil
		}
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			s.rows++
			s.report(RowError{File: s.file, Line: pe.StartLine, Reason: "not valid CSV: " + pe.Err.Error() + fmt.Sprintf(" (line %d, byte %d)", pe.Line, pe.Column)})
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
		return false
	}
	if key == "" {
		return bad("missing key")
	}
	if s.numeric && !digits(key) {
		return bad(fmt.Sprintf("key %q is not a number (key_order: numeric)", key))
	}
	r.key = key
	if s.lastRow > 0 {
		switch c := compareKeys(key, s.last, s.numeric); {
		case c < 0:
			return bad(fmt.Sprintf("key %q comes after %q (line %d): the file must be sorted by this column", key, s.last, s.lastRow))
		case c == 0 && s.e.root:
			return bad(fmt.Sprintf("duplicate account key %q (first at line %d)", key, s.lastRow))
		}
	}
	if s.lastRow == 0 || s.last != key {
		s.last, s.lastRow = key, r.line
	}
	return true
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
