package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// migrator reconcile against the real API: a source pushed in full
// reconciles with exit 0; one landed transaction altered in the database,
// and an account of the source never pushed, are both reported, exit 2.
func TestReconcileSourceWithWhatLanded(t *testing.T) {
	e := newEnv(t)
	lines := validLines(t, "RCN", 8)
	file := e.writeFile("accounts.ndjson", lines)
	if _, err := e.push(file, e.dir+"/report.csv"); err != nil {
		t.Fatal(err)
	}
	out, err := e.run(context.Background(), context.Background(), "reconcile", "--supplier", "DEMO_ENERGY", "--source", file)
	if err != nil || !strings.Contains(out, "no differences") || !strings.Contains(out, "source 8 accounts, landed 8") {
		t.Fatalf("clean reconcile: %v\n%s", err, out)
	}

	const victim = "RCN-0005"
	if err := e.st.DB.Gorm().Exec(`UPDATE account_transactions SET amount = amount + 1
		WHERE transaction_id = 'TX-EXT-0001-001' AND account_id = (SELECT id FROM accounts WHERE external_account_number = ?)`, victim).Error; err != nil {
		t.Fatal(err)
	}
	more := e.writeFile("more.ndjson", append(lines, accountLine(t, "RCN-NEVER")))
	out, err = e.run(context.Background(), context.Background(), "reconcile", "--supplier", "DEMO_ENERGY", "--source", more, "--json")
	if !errors.Is(err, errDiffers) {
		t.Fatalf("reconcile after altering %s: %v\n%s", victim, err, out)
	}
	var rep reconcileReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.MissingCount != 1 || rep.Missing[0] != "RCN-NEVER" || rep.NotInSourceCount != 0 || rep.DifferingCount != 1 {
		t.Fatalf("report %+v", rep)
	}
	d := rep.Differences[0]
	if len(rep.Differences) != 1 || d.ExternalAccountNumber != victim || d.Field != "transactions.CHARGE.amount" || d.Landed != "13.5" || d.Staged != "12.5" {
		t.Errorf("differences %+v", rep.Differences)
	}
	if rep.Source["transactions.CHARGE.amount"] != "112.5" || rep.Landed["transactions.CHARGE.amount"] != "101" {
		t.Errorf("totals: source %s, landed %s", rep.Source["transactions.CHARGE.amount"], rep.Landed["transactions.CHARGE.amount"])
	}
	// Text output names the account too.
	out, err = e.run(context.Background(), context.Background(), "reconcile", "--supplier", "DEMO_ENERGY", "--source", file)
	if !errors.Is(err, errDiffers) || !strings.Contains(out, victim+" transactions.CHARGE.amount: source 12.5, landed 13.5") {
		t.Errorf("text report: %v\n%s", err, out)
	}
}
