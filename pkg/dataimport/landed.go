package dataimport

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/gowebpki/jcs"
	"github.com/shopspring/decimal"
)

// What landed (CONTRACT §14): an account as read back from the platform's
// own tables, in one JSON form whichever path (v1, v2, job) created it:
// every value the account was created with, platform-assigned ids and
// timestamps left out, decimals as strings with their column's scale,
// children in the order of their natural keys (pkg/postgres/landed.go
// builds it). Its landed_digest and its figures are computed here.

// LandedDigest is "sha256:" + the hex SHA-256 of the RFC 8785 canonical
// form (sorted keys, no insignificant whitespace) of an account's landed
// JSON.
func LandedDigest(landed []byte) (string, error) {
	canon, err := jcs.Transform(landed)
	if err != nil {
		return "", fmt.Errorf("canonical landed account: %w", err)
	}
	sum := sha256.Sum256(canon)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// AccountFigures are the counts and sums of one account (or of many, added
// up) that reconciliation compares: field name → figure.
type AccountFigures map[string]decimal.Decimal

// Figure names. Transactions are counted and summed per type:
// "transactions.CHARGE.count", "transactions.CHARGE.amount", ...
const (
	FigureCustomers           = "customers"
	FigureSupplyAddresses     = "supply_addresses"
	FigureMeterPoints         = "meter_points"
	FigureMeters              = "meters"
	FigureRegisters           = "registers"
	FigureReadings            = "readings"
	FigureAgreements          = "agreements"
	FigureTransferBalance     = "transfer_balance"
	FigureBalance             = "balance"
	FigureStatements          = "statements"
	FigurePaymentSchedules    = "payment_schedules"
	FigurePaymentInstructions = "payment_instructions"
)

func txCountFigure(t TransactionType) string  { return "transactions." + string(t) + ".count" }
func txAmountFigure(t TransactionType) string { return "transactions." + string(t) + ".amount" }

// newFigures has every figure at 0, so every account and total shows the same fields.
func newFigures() AccountFigures {
	f := AccountFigures{}
	for _, k := range []string{FigureCustomers, FigureSupplyAddresses, FigureMeterPoints, FigureMeters, FigureRegisters, FigureReadings,
		FigureAgreements, FigureTransferBalance, FigureBalance, FigureStatements, FigurePaymentSchedules, FigurePaymentInstructions} {
		f[k] = decimal.Zero
	}
	for _, t := range TransactionTypes {
		f[txCountFigure(t)], f[txAmountFigure(t)] = decimal.Zero, decimal.Zero
	}
	return f
}

// NewFigures is a total with every figure at 0.
func NewFigures() AccountFigures { return newFigures() }

func (f AccountFigures) inc(k string, n int) { f[k] = f[k].Add(decimal.NewFromInt(int64(n))) }

// Add adds g to f.
func (f AccountFigures) Add(g AccountFigures) {
	for k, v := range g {
		f[k] = f[k].Add(v)
	}
}

// Strings is f with figures as decimal strings (the wire form).
func (f AccountFigures) Strings() map[string]string {
	out := make(map[string]string, len(f))
	for k, v := range f {
		out[k] = v.String()
	}
	return out
}

// StagedFigures are the figures an account is created with, from the
// payload that was staged: one open statement; the balance is
// transfer_balance plus the opening transactions' effects.
func StagedFigures(a *Account) AccountFigures {
	f := newFigures()
	f.inc(FigureCustomers, len(a.Customers))
	f.inc(FigureSupplyAddresses, len(a.SupplyAddresses))
	for _, sa := range a.SupplyAddresses {
		f.inc(FigureMeterPoints, len(sa.MeterPoints))
		for _, mp := range sa.MeterPoints {
			f.inc(FigureAgreements, len(mp.Agreements))
			f.inc(FigureMeters, len(mp.Meters))
			for _, me := range mp.Meters {
				f.inc(FigureRegisters, len(me.Registers))
				f.inc(FigureReadings, len(me.TransferReadings))
			}
		}
	}
	bal := a.OpeningBalance()
	f[FigureTransferBalance] = bal
	for i := range a.CurrentStatementTransactions {
		t := &a.CurrentStatementTransactions[i]
		f.inc(txCountFigure(t.Type), 1)
		f[txAmountFigure(t.Type)] = f[txAmountFigure(t.Type)].Add(t.Amount.Decimal)
		bal = bal.Add(t.BalanceEffect())
	}
	f[FigureBalance] = bal
	f.inc(FigureStatements, 1)
	f.inc(FigurePaymentSchedules, len(a.PaymentSchedules))
	f.inc(FigurePaymentInstructions, len(a.PaymentInstructions))
	return f
}

// landedView is what the figures need of a landed account's JSON.
type landedView struct {
	TransferBalance decimal.Decimal   `json:"transfer_balance"`
	Balance         decimal.Decimal   `json:"balance"`
	Customers       []json.RawMessage `json:"customers"`
	SupplyAddresses []struct {
		MeterPoints []struct {
			Agreements []json.RawMessage `json:"agreements"`
			Meters     []struct {
				Registers []json.RawMessage `json:"registers"`
				Readings  []json.RawMessage `json:"readings"`
			} `json:"meters"`
		} `json:"meter_points"`
	} `json:"supply_addresses"`
	Statements   []json.RawMessage `json:"statements"`
	Transactions []struct {
		Type   TransactionType `json:"type"`
		Amount decimal.Decimal `json:"amount"`
	} `json:"transactions"`
	PaymentSchedules    []json.RawMessage `json:"payment_schedules"`
	PaymentInstructions []json.RawMessage `json:"payment_instructions"`
}

// LandedFigures are the figures of an account's landed JSON.
func LandedFigures(landed []byte) (AccountFigures, error) {
	var v landedView
	if err := json.Unmarshal(landed, &v); err != nil {
		return nil, fmt.Errorf("landed account: %w", err)
	}
	f := newFigures()
	f.inc(FigureCustomers, len(v.Customers))
	f.inc(FigureSupplyAddresses, len(v.SupplyAddresses))
	for _, sa := range v.SupplyAddresses {
		f.inc(FigureMeterPoints, len(sa.MeterPoints))
		for _, mp := range sa.MeterPoints {
			f.inc(FigureAgreements, len(mp.Agreements))
			f.inc(FigureMeters, len(mp.Meters))
			for _, me := range mp.Meters {
				f.inc(FigureRegisters, len(me.Registers))
				f.inc(FigureReadings, len(me.Readings))
			}
		}
	}
	f[FigureTransferBalance], f[FigureBalance] = v.TransferBalance, v.Balance
	for _, t := range v.Transactions {
		f.inc(txCountFigure(t.Type), 1)
		f[txAmountFigure(t.Type)] = f[txAmountFigure(t.Type)].Add(t.Amount)
	}
	f.inc(FigureStatements, len(v.Statements))
	f.inc(FigurePaymentSchedules, len(v.PaymentSchedules))
	f.inc(FigurePaymentInstructions, len(v.PaymentInstructions))
	return f, nil
}

// FigureDifference is one figure of one account that differs between what
// landed and what was staged (or a source's export). A figure absent on
// one side is "0" there; an account absent on one side has the field
// "account" with "missing" on that side.
type FigureDifference struct {
	ExternalAccountNumber string `json:"external_account_number"`
	Field                 string `json:"field"`
	Landed                string `json:"landed"`
	Staged                string `json:"staged"`
}

// FieldAccount and Missing name an account present on one side only.
const (
	FieldAccount = "account"
	Missing      = "missing"
	Present      = "present"
)

// DiffFigures lists the figures of one account that differ, by field name
// (numbers compare as numbers: 1.0 equals 1.00).
func DiffFigures(external string, landed, staged AccountFigures) []FigureDifference {
	keys := make([]string, 0, len(landed))
	for k := range landed {
		keys = append(keys, k)
	}
	for k := range staged {
		if _, ok := landed[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []FigureDifference
	for _, k := range keys {
		l, s := landed[k], staged[k]
		if !l.Equal(s) {
			out = append(out, FigureDifference{ExternalAccountNumber: external, Field: k, Landed: l.String(), Staged: s.String()})
		}
	}
	return out
}
