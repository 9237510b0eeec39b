package dataimport_test

import (
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

func TestParseControlDeclared(t *testing.T) {
	q := map[string]string{"expected_accounts": "3", "expected_transfer_balance_total": "-10.50",
		"expected_opening_transactions_total": "1.001", "expected_meter_points": "x"}
	d, errs := dataimport.ParseControlDeclared(func(k string) (string, bool) { v, ok := q[k]; return v, ok })
	if len(d) != 2 || !d[dataimport.ControlAccounts].Equal(decimal.NewFromInt(3)) || d[dataimport.ControlTransferBalanceTotal].String() != "-10.5" {
		t.Errorf("declared %v", d)
	}
	var attrs []string
	for _, e := range errs {
		attrs = append(attrs, e.Attr)
	}
	if strings.Join(attrs, ",") != "expected_opening_transactions_total,expected_meter_points" {
		t.Errorf("errors %v", errs)
	}
	if d, errs := dataimport.ParseControlDeclared(func(string) (string, bool) { return "", false }); d != nil || errs != nil {
		t.Errorf("nothing declared: %v %v", d, errs)
	}
}

func TestReconcileControlTotals(t *testing.T) {
	declared := dataimport.ControlDeclared{dataimport.ControlAccounts: decimal.NewFromInt(2),
		dataimport.ControlTransferBalanceTotal: decimal.RequireFromString("10.00")}
	got := dataimport.ControlFigures{Accounts: 2, TransferBalance: decimal.RequireFromString("10.0")}
	half := dataimport.ControlFigures{Accounts: 1, TransferBalance: decimal.RequireFromString("4")}
	// Received matches (10.0 equals 10.00); created so far is only compared once finished.
	totals, overall := dataimport.Reconcile(declared, got, &half, false)
	if overall != "match" || len(totals) != 2 || *totals[0].Created != "1" || totals[1].Declared != "10" {
		t.Errorf("in flight: %s %+v", overall, totals)
	}
	totals, overall = dataimport.Reconcile(declared, got, &half, true)
	if overall != "mismatch" || totals[0].Result != "mismatch" || totals[1].Result != "mismatch" {
		t.Errorf("finished with half created: %s %+v", overall, totals)
	}
	totals, overall = dataimport.Reconcile(declared, got, nil, true)
	if overall != "match" || totals[0].Created != nil {
		t.Errorf("a job that creates nothing: %s %+v", overall, totals)
	}
	if totals, overall := dataimport.Reconcile(nil, got, nil, true); overall != "none" || len(totals) != 0 {
		t.Errorf("nothing declared: %s %+v", overall, totals)
	}
}

func TestLandedDigestIsCanonical(t *testing.T) {
	a, err := dataimport.LandedDigest([]byte(`{"b": "1.50", "a": [1, {"y": true, "x": null}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := dataimport.LandedDigest([]byte(`{"a":[1,{"x":null,"y":true}],"b":"1.50"}`))
	if err != nil {
		t.Fatal(err)
	}
	c, _ := dataimport.LandedDigest([]byte(`{"a":[1,{"x":null,"y":true}],"b":"1.5"}`))
	if a != b || a == c || !strings.HasPrefix(a, "sha256:") || len(a) != 71 {
		t.Errorf("digests %s %s %s", a, b, c)
	}
}

func TestDiffFigures(t *testing.T) {
	l := dataimport.AccountFigures{"balance": decimal.RequireFromString("1.00"), "customers": decimal.NewFromInt(2)}
	s := dataimport.AccountFigures{"balance": decimal.RequireFromString("1"), "meters": decimal.NewFromInt(1)}
	d := dataimport.DiffFigures("E-1", l, s)
	if len(d) != 2 || d[0].Field != "customers" || d[0].Staged != "0" || d[1].Field != "meters" || d[1].Landed != "0" {
		t.Errorf("differences %+v", d)
	}
}

func TestParseControlLine(t *testing.T) {
	d, ok, e := dataimport.ParseControlLine([]byte(`{"control":{"expected_accounts":3,"expected_transfer_balance_total":"12.30"}}`))
	if !ok || e != nil || d[dataimport.ControlAccounts].String() != "3" || d[dataimport.ControlTransferBalanceTotal].String() != "12.3" {
		t.Errorf("control line: %v %v %v", d, ok, e)
	}
	if _, ok, _ := dataimport.ParseControlLine([]byte(`{"import_supplier":"X","control":1}`)); ok {
		t.Error("an account line taken for a control line")
	}
	_, ok, e = dataimport.ParseControlLine([]byte(`{"control":{"expected_accounts":-1,"expected_nothing":2}}`))
	if !ok || e == nil || len(e.Errors) != 2 || e.Errors[0].Attr != "control.expected_accounts" || e.Errors[1].Code != "unknown_field" {
		t.Errorf("bad control line: %v %+v", ok, e)
	}
}
