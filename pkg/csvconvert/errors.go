package csvconvert

import (
	"fmt"
	"strings"
)

// RowError is one row (or cell) that could not be mapped. Line is the
// file's line where the row (or, for a quoted multi-line cell, the cell)
// starts; Column is the cell's 1-based position in the row, 0 for the row.
type RowError struct {
	File       string
	Line       int
	Column     int
	ColumnName string
	Path       string // field path in the element the row fills
	Account    string // account key, when known
	Reason     string
}

// String: "customers.csv:14:5: column DOB: date_of_birth: "31.02.1980" is
// not a date in format DD.MM.YYYY (account 100023)".
func (e RowError) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d:", e.File, e.Line)
	if e.Column > 0 {
		fmt.Fprintf(&b, "%d: column %s:", e.Column, e.ColumnName)
	}
	if e.Path != "" {
		fmt.Fprintf(&b, " %s:", e.Path)
	}
	b.WriteString(" " + e.Reason)
	if e.Account != "" {
		fmt.Fprintf(&b, " (account %s)", e.Account)
	}
	return b.String()
}
