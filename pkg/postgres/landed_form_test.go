package postgres_test

import (
	"fmt"
	"testing"

	"github.com/gridshift/dataimport/pkg/postgres"
)

// TestLandedFormUnchanged holds the landed statement to the form partners
// already hold digests of: the statement as it was (each list ordered
// inside jsonb_agg) must give the same JSON, byte for byte, for accounts
// whose child rows were written out of their order (extra notes, PSR
// codes, agreements, meters, statements and transactions inserted so that
// the table's order is not the landed order), read one at a time and
// several at once.
func TestLandedFormUnchanged(t *testing.T) {
	e := newEnv(t)
	s := e.supplier("LANDED_FORM", false)
	var nums []string
	for i := range 3 {
		nums = append(nums, e.create(verified(e.prepare(s, fmt.Sprintf("LF-%d", i), false, withPayments))).PlatformAccountNumber)
	}
	var id int64
	e.scalar(&id, `SELECT id FROM accounts WHERE platform_account_number = ?`, nums[0])
	// dup inserts a copy of table's rows matching where, with fields set.
	dup := func(table, where, set string) {
		t.Helper()
		e.must(e.g.Exec(fmt.Sprintf(`INSERT INTO %[1]s SELECT (jsonb_populate_record(NULL::%[1]s, to_jsonb(x)
			|| jsonb_build_object('id', nextval(pg_get_serial_sequence('%[1]s', 'id'))) || %[3]s)).* FROM %[1]s x WHERE %[2]s`,
			table, where, set)).Error)
	}
	acc := fmt.Sprintf("account_id = %d", id)
	dup("account_notes", acc, `jsonb_build_object('body', 'zz ' || x.body)`)
	dup("account_notes", acc, `jsonb_build_object('body', 'aa', 'is_pinned', NOT x.is_pinned)`)
	dup("account_notes", acc, `jsonb_build_object('body', 'aa', 'document_paths', '["b/c.pdf"]'::jsonb)`)
	dup("account_transactions", acc, `jsonb_build_object('transaction_id', '0-' || x.transaction_id)`)
	dup("statements", acc, `jsonb_build_object('period_from', x.period_from - 400, 'period_to', x.period_to - 400, 'status', 'CLOSED')`)
	dup("agreements", fmt.Sprintf("meter_point_id IN (SELECT id FROM meter_points WHERE %s)", acc),
		`jsonb_build_object('valid_from', x.valid_from - 9000, 'valid_to', x.valid_from - 1, 'tariff_code', 'Z' || x.tariff_code)`)
	dup("meters", acc, `jsonb_build_object('serial_number', '0' || x.serial_number)`)
	dup("customer_psr", fmt.Sprintf("customer_id IN (SELECT id FROM account_customers WHERE %s)", acc), `jsonb_build_object('code', 'ZZ')`)
	e.must(e.g.Exec(fmt.Sprintf(`INSERT INTO customer_psr (customer_id, code, effective_from)
		SELECT id, c, DATE '2020-01-01' FROM account_customers, unnest(ARRAY['Z9', 'A1', 'M5']) c WHERE %s`, acc)).Error)
	var extra int
	e.scalar(&extra, `SELECT count(*) FROM customer_psr p JOIN account_customers c ON c.id = p.customer_id WHERE c.account_id = ?`, id)
	if extra < 3 {
		t.Fatalf("the account has %d PSR rows; the test wants several", extra)
	}

	read := func(query string, one bool) map[string]string {
		t.Helper()
		out := map[string]string{}
		var rows []struct{ Num, JSON string }
		if one {
			for _, n := range nums {
				var r []struct{ Num, JSON string }
				e.must(e.g.Raw(`SELECT platform_account_number AS num, js AS json FROM (`+query+` WHERE a.platform_account_number = ?) x(id, ext, platform_account_number, ver, js)`, n).Scan(&r).Error)
				rows = append(rows, r...)
			}
		} else {
			e.must(e.g.Raw(`SELECT platform_account_number AS num, js AS json FROM (`+query+` WHERE a.platform_account_number IN ?) x(id, ext, platform_account_number, ver, js)`, nums).Scan(&rows).Error)
		}
		for _, r := range rows {
			out[r.Num] = r.JSON
		}
		return out
	}
	for _, one := range []bool{true, false} {
		was, now := read(oldLandedSelect, one), read(postgres.LandedSelect, one)
		if len(now) != len(nums) {
			t.Fatalf("read %d of %d accounts", len(now), len(nums))
		}
		for _, n := range nums {
			if was[n] != now[n] {
				t.Errorf("one at a time %v: account %s\nwas %s\nnow %s", one, n, was[n], now[n])
			}
		}
	}
}

// oldLandedSelect is landedSelect as it was until 2026-12-06 (ordered
// aggregates), kept to hold the new statement to its answers.
const oldLandedSelect = `
SELECT a.id, a.external_account_number, a.platform_account_number, a.landed_version, jsonb_build_object(
  'external_account_number', a.external_account_number,
  'account_type', a.account_type,
  'details', a.details - 'import_supplier',
  'transfer_balance', a.transfer_balance::text,
  'balance', a.balance::text,
  'customers', (SELECT coalesce(jsonb_agg(jsonb_build_object(
      'position', c.position, 'given_name', c.given_name, 'family_name', c.family_name, 'title', c.title,
      'salutation', c.salutation, 'email', c.email, 'mobile', c.mobile, 'landline', c.landline,
      'date_of_birth', c.date_of_birth::text, 'customer_preferences', c.customer_preferences,
      'psr', (SELECT coalesce(jsonb_agg(jsonb_build_object('code', p.code, 'effective_from', p.effective_from::text,
                'effective_to', p.effective_to::text) ORDER BY p.code, p.effective_from, p.effective_to), '[]')
                FROM customer_psr p WHERE p.customer_id = c.id)
    ) ORDER BY c.position), '[]') FROM account_customers c WHERE c.account_id = a.id),
  'supply_addresses', (SELECT coalesce(jsonb_agg(jsonb_build_object(
      'position', s.position, 'supply_address1', s.supply_address1, 'supply_address2', s.supply_address2,
      'supply_address3', s.supply_address3, 'supply_address4', s.supply_address4, 'supply_address5', s.supply_address5,
      'supply_postcode', s.supply_postcode, 'customer_at_supply_address_from_date', s.customer_at_supply_address_from_date::text,
      'meter_points', (SELECT coalesce(jsonb_agg(jsonb_build_object(
          'mpxn', m.mpxn, 'fuel', m.fuel, 'supply_start_date', m.supply_start_date::text, 'supply_end_date', m.supply_end_date::text,
          'profile_class', m.profile_class, 'ssc', m.ssc, 'estimated_annual_consumption', m.estimated_annual_consumption::text,
          'agreements', (SELECT coalesce(jsonb_agg(jsonb_build_object('tariff_code', g.tariff_code, 'product_code', g.product_code,
                'valid_from', g.valid_from::text, 'valid_to', g.valid_to::text)
                ORDER BY g.valid_from, g.valid_to, g.tariff_code, g.product_code), '[]') FROM agreements g WHERE g.meter_point_id = m.id),
          'meters', (SELECT coalesce(jsonb_agg(jsonb_build_object('serial_number', me.serial_number,
                'registers', (SELECT coalesce(jsonb_agg(jsonb_build_object('register_id', r.register_id,
                      'number_of_digits', r.number_of_digits, 'rate_type', r.rate_type) ORDER BY r.register_id), '[]')
                      FROM meter_registers r WHERE r.meter_id = me.id),
                'readings', (SELECT coalesce(jsonb_agg(jsonb_build_object('register_id', t.register_id,
                      'reading_date', t.reading_date::text, 'reading_value', t.reading_value::text, 'reading_type', t.reading_type)
                      ORDER BY t.register_id, t.reading_date), '[]') FROM transfer_readings t WHERE t.meter_id = me.id)
              ) ORDER BY me.serial_number), '[]') FROM meters me WHERE me.meter_point_id = m.id)
        ) ORDER BY m.mpxn), '[]') FROM meter_points m WHERE m.account_id = a.id AND m.supply_address_id = s.id)
    ) ORDER BY s.position), '[]') FROM supply_addresses s WHERE s.account_id = a.id),
  'statements', (SELECT coalesce(jsonb_agg(jsonb_build_object('period_from', st.period_from::text, 'period_to', st.period_to::text,
      'status', st.status) ORDER BY st.period_from, st.period_to), '[]') FROM statements st WHERE st.account_id = a.id),
  'transactions', (SELECT coalesce(jsonb_agg(jsonb_build_object('transaction_id', x.transaction_id, 'type', x.type,
      'transaction_date', x.transaction_date::text, 'original_date', x.original_date::text, 'amount', x.amount::text,
      'balance_effect', x.balance_effect::text, 'description', x.description, 'data', x.data)
      ORDER BY x.transaction_id), '[]') FROM account_transactions x WHERE x.account_id = a.id),
  'notes', (SELECT coalesce(jsonb_agg(jsonb_build_object('body', n.body, 'document_paths', n.document_paths, 'is_pinned', n.is_pinned,
      'unpin_at', to_char(n.unpin_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
      ORDER BY n.body, n.document_paths::text, n.is_pinned, n.unpin_at), '[]') FROM account_notes n WHERE n.account_id = a.id),
  'payment_schedules', (SELECT coalesce(jsonb_agg(jsonb_build_object('position', ps.position, 'means', ps.means,
      'start_date', ps.start_date::text, 'frequency', ps.frequency, 'amount', ps.amount::text) ORDER BY ps.position), '[]')
      FROM account_payment_schedules ps WHERE ps.account_id = a.id),
  'payment_instructions', (SELECT coalesce(jsonb_agg(jsonb_build_object('vendor', pi.vendor, 'reference', pi.reference,
      'type', pi.type, 'status', pi.status, 'card_brand', pi.card_brand, 'card_last4', pi.card_last4,
      'card_exp_month', pi.card_exp_month, 'card_exp_year', pi.card_exp_year, 'mandate_status', pi.mandate_status)
      ORDER BY pi.vendor, pi.reference), '[]') FROM payment_instructions pi WHERE pi.account_id = a.id)
)::text
FROM accounts a `
