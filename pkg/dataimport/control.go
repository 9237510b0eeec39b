package dataimport

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"
)

// Control totals of a bulk job (CONTRACT §14): the partner declares what its
// source holds; the job states, per total, what it received and created and
// whether they match. A mismatch is never silent: it is on the job's view,
// its events and the console.

// Control total names, each declared by the query parameter "expected_" + name.
const (
	ControlAccounts                 = "accounts"
	ControlTransferBalanceTotal     = "transfer_balance_total"
	ControlOpeningTransactionsTotal = "opening_transactions_total"
	ControlMeterPoints              = "meter_points"
)

// ControlNames lists the totals in the order a job shows them.
var ControlNames = []string{ControlAccounts, ControlTransferBalanceTotal, ControlOpeningTransactionsTotal, ControlMeterPoints}

// Reconciliation results.
const (
	ReconciliationMatch    = "match"
	ReconciliationMismatch = "mismatch"
	ReconciliationNone     = "none" // nothing declared
)

// ControlFigures are the figures a set of accounts adds up to: how many,
// the sum of their transfer_balance, the sum of the amounts of their
// current_statement_transactions (as sent, unsigned), their meter points.
type ControlFigures struct {
	Accounts            int64
	TransferBalance     decimal.Decimal
	OpeningTransactions decimal.Decimal
	MeterPoints         int64
}

// FiguresOf is one account's figures.
func FiguresOf(a *Account) ControlFigures {
	f := ControlFigures{Accounts: 1, TransferBalance: a.OpeningBalance(), MeterPoints: int64(a.MeterPointCount())}
	for i := range a.CurrentStatementTransactions {
		f.OpeningTransactions = f.OpeningTransactions.Add(a.CurrentStatementTransactions[i].Amount.Decimal)
	}
	return f
}

// Add adds g to f.
func (f *ControlFigures) Add(g ControlFigures) {
	f.Accounts += g.Accounts
	f.TransferBalance = f.TransferBalance.Add(g.TransferBalance)
	f.OpeningTransactions = f.OpeningTransactions.Add(g.OpeningTransactions)
	f.MeterPoints += g.MeterPoints
}

// Value is the figure of the named total, as a decimal.
func (f ControlFigures) Value(name string) decimal.Decimal {
	switch name {
	case ControlAccounts:
		return decimal.NewFromInt(f.Accounts)
	case ControlTransferBalanceTotal:
		return f.TransferBalance
	case ControlOpeningTransactionsTotal:
		return f.OpeningTransactions
	default:
		return decimal.NewFromInt(f.MeterPoints)
	}
}

// ControlDeclared is what a job declared: total name → figure, as sent.
type ControlDeclared map[string]decimal.Decimal

// ParseControlDeclared reads the expected_* query parameters (get returns
// a parameter's value and whether it was sent). Counts are whole numbers
// of at least 0; totals are money (at most 2 decimal places).
func ParseControlDeclared(get func(string) (string, bool)) (ControlDeclared, []FieldError) {
	var d ControlDeclared
	var errs []FieldError
	for _, name := range ControlNames {
		attr := "expected_" + name
		v, ok := get(attr)
		if !ok {
			continue
		}
		var fig decimal.Decimal
		if name == ControlAccounts || name == ControlMeterPoints {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				errs = append(errs, FieldError{Attr: attr, Code: CodeInvalid, Detail: "Must be a whole number of at least 0."})
				continue
			}
			fig = decimal.NewFromInt(n)
		} else {
			m, code, detail := parseDecimal(v)
			if code == "" && m.Exponent() < -moneyDecimalPlaces {
				code, detail = CodeInvalidDecimal, fmt.Sprintf("Must be a decimal with at most %d decimal places.", moneyDecimalPlaces)
			}
			if code != "" {
				errs = append(errs, FieldError{Attr: attr, Code: code, Detail: detail})
				continue
			}
			fig = m
		}
		if d == nil {
			d = ControlDeclared{}
		}
		d[name] = fig
	}
	return d, errs
}

// ControlTotal is one declared total beside what the job received and
// created. Figures are decimal strings; Created is null for a job that
// creates nothing (create=false or a dry run).
type ControlTotal struct {
	Name     string  `json:"name"`
	Declared string  `json:"declared"`
	Received string  `json:"received"`
	Created  *string `json:"created"`
	Result   string  `json:"result"`
}

// Reconcile compares what was declared with what was received and, once
// the job is finished and if it creates accounts, with what was created
// (created nil: it does not). A total matches when every compared figure
// equals the declared one (as numbers: 10.0 equals 10.00). The overall
// result is none when nothing was declared, else mismatch if any total
// does not match.
func Reconcile(declared ControlDeclared, received ControlFigures, created *ControlFigures, finished bool) ([]ControlTotal, string) {
	if len(declared) == 0 {
		return []ControlTotal{}, ReconciliationNone
	}
	out := make([]ControlTotal, 0, len(declared))
	overall := ReconciliationMatch
	for _, name := range ControlNames {
		want, ok := declared[name]
		if !ok {
			continue
		}
		got := received.Value(name)
		t := ControlTotal{Name: name, Declared: want.String(), Received: got.String(), Result: ReconciliationMatch}
		if !got.Equal(want) {
			t.Result = ReconciliationMismatch
		}
		if created != nil {
			c := created.Value(name)
			s := c.String()
			t.Created = &s
			if finished && !c.Equal(want) {
				t.Result = ReconciliationMismatch
			}
		}
		if t.Result == ReconciliationMismatch {
			overall = ReconciliationMismatch
		}
		out = append(out, t)
	}
	return out, overall
}

// ControlLine is the prefix of an upload's control line: a line
// {"control": {"expected_accounts": 3, ...}} (usually the last) declares
// totals as the query parameters do, for a source that knows them only
// once it has written its accounts.
const ControlLine = `{"control"`

// ParseControlLine reads a control line: ok is false when line is no
// control line (an account, or anything else: the account rules judge it).
// Values may be strings or JSON numbers; a total the line gives replaces
// the query parameter's.
func ParseControlLine(line []byte) (d ControlDeclared, ok bool, e *Error) {
	var outer map[string]json.RawMessage
	if len(line) < len(ControlLine) || string(line[:len(ControlLine)]) != ControlLine || json.Unmarshal(line, &outer) != nil || len(outer) != 1 {
		return nil, false, nil
	}
	var inner map[string]json.RawMessage
	if err := json.Unmarshal(outer["control"], &inner); err != nil {
		return nil, true, Errorf(CodeInvalidPayload, "The control line must be {\"control\": {\"expected_accounts\": …}}.")
	}
	values := map[string]string{}
	var errs []FieldError
	for k, raw := range inner {
		name, known := strings.CutPrefix(k, "expected_")
		if !known || !slices.Contains(ControlNames, name) {
			errs = append(errs, FieldError{Attr: "control." + k, Code: CodeUnknownField, Detail: "Unknown control total."})
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(raw) // a JSON number, as written
		}
		values[k] = s
	}
	d, perrs := ParseControlDeclared(func(k string) (string, bool) { v, ok := values[k]; return v, ok })
	for _, pe := range perrs {
		pe.Attr = "control." + pe.Attr
		errs = append(errs, pe)
	}
	if len(errs) > 0 {
		slices.SortFunc(errs, func(a, b FieldError) int { return strings.Compare(a.Attr, b.Attr) })
		return nil, true, &Error{Code: CodeInvalidPayload, Detail: "Invalid control line.", Errors: errs}
	}
	return d, true, nil
}
