package postgres_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/gridshift/dataimport/pkg/postgres"
)

// TestBatchRowsUnderTheirOwnAccount: accounts of different shapes created
// together in one transaction land exactly as each does created alone (the
// same landed form), and every row that names its account twice (its own
// account_id and its parent's) names the same one. Children point at their
// parents by ids drawn before the transaction, so a child filed under a
// neighbour's parent would show here.
func TestBatchRowsUnderTheirOwnAccount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	together, alone := e.supplier("BATCHED", true), e.supplier("ALONE", true)
	shape := func(i int) func(map[string]any) {
		return func(m map[string]any) {
			withPayments(m)
			withMeterData(1 + i%3)(m) // one to three electricity meters
			cs := m["customers"].([]any)
			cs[0].(map[string]any)["given_name"] = fmt.Sprintf("Given%d", i)
			if i%2 == 1 { // the second customer without an e-mail: no welcome e-mail for them
				delete(cs[1].(map[string]any), "email")
			}
			if i%4 == 2 {
				delete(m, "payment_schedules")
				delete(m, "payment_instructions")
			}
		}
	}
	const n = 7
	var batch []postgres.CreationInput
	for i := range n {
		ext := fmt.Sprintf("SHAPE-%d", i)
		batch = append(batch, verified(e.prepare(together, ext, false, shape(i))))
		e.create(verified(e.prepare(alone, ext, false, shape(i))))
	}
	res, errs := e.db.CreateJobAccounts(e.ctx, 0, batch)
	e.must(errors.Join(errs...))

	landed := func(supplier int64) map[string]string {
		var rows []struct{ Ext, JSON string }
		e.must(e.g.Raw(`SELECT x.ext, x.js AS json FROM (`+postgres.LandedSelect+` WHERE a.supplier_id = ?) x(id, ext, num, ver, js)`,
			supplier).Scan(&rows).Error)
		out := map[string]string{}
		for _, r := range rows {
			out[r.Ext] = r.JSON
		}
		return out
	}
	got, want := landed(together.ID), landed(alone.ID)
	if len(got) != n || len(want) != n {
		t.Fatalf("landed %d accounts together and %d alone, want %d each", len(got), len(want), n)
	}
	for ext, w := range want {
		if got[ext] != w {
			t.Errorf("%s created with others:\n%s\ncreated alone:\n%s", ext, got[ext], w)
		}
	}

	// Every row naming an account twice names one account.
	for _, q := range []string{
		`SELECT count(*) FROM meter_points m JOIN supply_addresses s ON s.id = m.supply_address_id WHERE m.account_id <> s.account_id`,
		`SELECT count(*) FROM meters me JOIN meter_points m ON m.id = me.meter_point_id WHERE me.account_id <> m.account_id`,
		`SELECT count(*) FROM account_transactions x JOIN statements s ON s.id = x.statement_id WHERE x.account_id <> s.account_id`,
		`SELECT count(*) FROM welcome_emails w JOIN account_customers c ON c.id = w.customer_id WHERE w.account_id <> c.account_id OR w.email <> c.email`,
		`SELECT count(*) FROM accounts a JOIN import_processes p ON p.id = a.import_process_id WHERE p.platform_account_number <> a.platform_account_number`,
	} {
		var bad int
		e.scalar(&bad, q)
		if bad != 0 {
			t.Errorf("%d rows disagree: %s", bad, q)
		}
	}

	// The answer names each account's own id (ascending in the order the
	// accounts were given) and welcome e-mails, in customer order.
	for i, r := range res {
		if i > 0 && r.AccountID <= res[i-1].AccountID {
			t.Errorf("account %d has id %d, after %d", i, r.AccountID, res[i-1].AccountID)
		}
		var id int64
		var mails []int64
		e.scalar(&id, `SELECT id FROM accounts WHERE platform_account_number = ?`, r.PlatformAccountNumber)
		e.must(e.g.Raw(`SELECT w.id FROM welcome_emails w JOIN account_customers c ON c.id = w.customer_id
			WHERE w.account_id = ? ORDER BY c.position`, id).Scan(&mails).Error)
		if r.AccountID != id || fmt.Sprint(r.WelcomeEmailIDs) != fmt.Sprint(mails) {
			t.Errorf("account %d: answered id %d, e-mails %v; stored id %d, e-mails %v", i, r.AccountID, r.WelcomeEmailIDs, id, mails)
		}
		if wantMails := 2 - i%2; len(mails) != wantMails {
			t.Errorf("account %d: %d welcome e-mails, want %d", i, len(mails), wantMails)
		}
	}
}
