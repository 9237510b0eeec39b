package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Accounts read back from the platform's tables (CONTRACT §14): one JSON
// per account with every value it was created with, and nothing the
// platform assigned (ids, platform number, timestamps of insertion; a
// note's created_at is left out too, as it defaults to the creation time).
// Decimals are text with their column's scale, dates ISO, a partner's
// timestamps UTC; children come in the order of their natural keys, so the
// form depends on nothing but what is in the tables. The supplier is left
// out of the details too: it is where the account is, not what it is (the
// same account under a test and a live supplier has one digest).
//
// One statement reads a whole page of accounts, each child table through
// its account's (or parent's) index; meter points through their account's,
// as supply_address_id has none (a scan of every meter point per address
// made 5,000 accounts take minutes). Each list is aggregated from a subquery
// that orders it, not with ORDER BY inside jsonb_agg: Postgres 15 sets up a
// sort for every ordered aggregate of every row, at a cost that grows with
// work_mem (100 accounts: 89-282 ms, now 25-31; the same JSON byte for
// byte, TestLandedFormUnchanged). landed_digest is computed on the first
// read after the account changed and kept with the account's landed_version
// (migration 00032), so the creation path pays nothing for it and a status
// read pays for it once, not on every read.

// landedSelect answers (account id, external number, platform number,
// landed version, landed JSON) for the accounts the WHERE clause appended
// to it keeps.
const landedSelect = `
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
                'effective_to', p.effective_to::text)), '[]')
                FROM (SELECT * FROM customer_psr WHERE customer_id = c.id ORDER BY code, effective_from, effective_to) p)
    )), '[]') FROM (SELECT * FROM account_customers WHERE account_id = a.id ORDER BY position) c),
  'supply_addresses', (SELECT coalesce(jsonb_agg(jsonb_build_object(
      'position', s.position, 'supply_address1', s.supply_address1, 'supply_address2', s.supply_address2,
      'supply_address3', s.supply_address3, 'supply_address4', s.supply_address4, 'supply_address5', s.supply_address5,
      'supply_postcode', s.supply_postcode, 'customer_at_supply_address_from_date', s.customer_at_supply_address_from_date::text,
      'meter_points', (SELECT coalesce(jsonb_agg(jsonb_build_object(
          'mpxn', m.mpxn, 'fuel', m.fuel, 'supply_start_date', m.supply_start_date::text, 'supply_end_date', m.supply_end_date::text,
          'profile_class', m.profile_class, 'ssc', m.ssc, 'estimated_annual_consumption', m.estimated_annual_consumption::text,
          'agreements', (SELECT coalesce(jsonb_agg(jsonb_build_object('tariff_code', g.tariff_code, 'product_code', g.product_code,
                'valid_from', g.valid_from::text, 'valid_to', g.valid_to::text)), '[]')
                FROM (SELECT * FROM agreements WHERE meter_point_id = m.id ORDER BY valid_from, valid_to, tariff_code, product_code) g),
          'meters', (SELECT coalesce(jsonb_agg(jsonb_build_object('serial_number', me.serial_number,
                'registers', (SELECT coalesce(jsonb_agg(jsonb_build_object('register_id', r.register_id,
                      'number_of_digits', r.number_of_digits, 'rate_type', r.rate_type)), '[]')
                      FROM (SELECT * FROM meter_registers WHERE meter_id = me.id ORDER BY register_id) r),
                'readings', (SELECT coalesce(jsonb_agg(jsonb_build_object('register_id', t.register_id,
                      'reading_date', t.reading_date::text, 'reading_value', t.reading_value::text, 'reading_type', t.reading_type)
                      ), '[]') FROM (SELECT * FROM transfer_readings WHERE meter_id = me.id ORDER BY register_id, reading_date) t)
              )), '[]') FROM (SELECT * FROM meters WHERE meter_point_id = m.id ORDER BY serial_number) me)
        )), '[]') FROM (SELECT * FROM meter_points WHERE account_id = a.id AND supply_address_id = s.id ORDER BY mpxn) m)
    )), '[]') FROM (SELECT * FROM supply_addresses WHERE account_id = a.id ORDER BY position) s),
  'statements', (SELECT coalesce(jsonb_agg(jsonb_build_object('period_from', st.period_from::text, 'period_to', st.period_to::text,
      'status', st.status)), '[]') FROM (SELECT * FROM statements WHERE account_id = a.id ORDER BY period_from, period_to) st),
  'transactions', (SELECT coalesce(jsonb_agg(jsonb_build_object('transaction_id', x.transaction_id, 'type', x.type,
      'transaction_date', x.transaction_date::text, 'original_date', x.original_date::text, 'amount', x.amount::text,
      'balance_effect', x.balance_effect::text, 'description', x.description, 'data', x.data)
      ), '[]') FROM (SELECT * FROM account_transactions WHERE account_id = a.id ORDER BY transaction_id) x),
  'notes', (SELECT coalesce(jsonb_agg(jsonb_build_object('body', n.body, 'document_paths', n.document_paths, 'is_pinned', n.is_pinned,
      'unpin_at', to_char(n.unpin_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
      ), '[]') FROM (SELECT * FROM account_notes WHERE account_id = a.id ORDER BY body, document_paths::text, is_pinned, unpin_at) n),
  'payment_schedules', (SELECT coalesce(jsonb_agg(jsonb_build_object('position', ps.position, 'means', ps.means,
      'start_date', ps.start_date::text, 'frequency', ps.frequency, 'amount', ps.amount::text)), '[]')
      FROM (SELECT * FROM account_payment_schedules WHERE account_id = a.id ORDER BY position) ps),
  'payment_instructions', (SELECT coalesce(jsonb_agg(jsonb_build_object('vendor', pi.vendor, 'reference', pi.reference,
      'type', pi.type, 'status', pi.status, 'card_brand', pi.card_brand, 'card_last4', pi.card_last4,
      'card_exp_month', pi.card_exp_month, 'card_exp_year', pi.card_exp_year, 'mandate_status', pi.mandate_status)
      ), '[]') FROM (SELECT * FROM payment_instructions WHERE account_id = a.id ORDER BY vendor, reference) pi)
)::text
FROM accounts a `

// LandedAccount is one account as read back, with its digest.
type LandedAccount struct {
	AccountID             int64
	ExternalAccountNumber string
	PlatformAccountNumber string
	Version               int64  // accounts.landed_version read in the same snapshot
	JSON                  []byte // the landed form (dataimport.LandedDigest)
	Digest                string
}

// landedAccounts reads the accounts with the given ids (any order; those
// that do not exist are left out), keyed by id.
func (db *DB) landedAccounts(ctx context.Context, ids []int64) (map[int64]LandedAccount, error) {
	if len(ids) == 0 {
		return map[int64]LandedAccount{}, nil
	}
	if len(ids) == 1 {
		// One account (a status read) by a scalar: Postgres then plans the
		// statement once per connection. With an array it re-planned it on
		// every read (the planner prices a generic plan for an array of
		// unknown length above the custom one), about 1.5 ms of a 2.5 ms read.
		return db.readLanded(ctx, `WHERE a.id = $1::bigint`, ids[0])
	}
	return db.readLanded(ctx, `WHERE a.id = ANY($1::bigint[])`, ids)
}

func (db *DB) readLanded(ctx context.Context, where string, arg any) (map[int64]LandedAccount, error) {
	return db.readLandedFrom(ctx, db.readSQL, where, arg)
}

func (db *DB) readLandedFrom(ctx context.Context, pool *sql.DB, where string, arg any) (map[int64]LandedAccount, error) {
	out := map[int64]LandedAccount{}
	rows, err := pool.QueryContext(ctx, landedSelect+where, arg)
	if err != nil {
		return nil, fmt.Errorf("read landed accounts: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var l LandedAccount
		var js string
		if err := rows.Scan(&l.AccountID, &l.ExternalAccountNumber, &l.PlatformAccountNumber, &l.Version, &js); err != nil {
			return nil, fmt.Errorf("read landed accounts: %w", err)
		}
		l.JSON = []byte(js)
		if l.Digest, err = dataimport.LandedDigest(l.JSON); err != nil {
			return nil, err
		}
		out[l.AccountID] = l
	}
	return out, rows.Err()
}

// LandedDigests answers the landed_digest of each platform account number
// given that names an account (the others are left out). A digest kept for
// the account's current landed_version is answered as kept; the others are
// read back from the platform tables in one statement, and kept after the
// answer (landed_keep.go).
func (db *DB) LandedDigests(ctx context.Context, platformNumbers []string) (map[string]string, error) {
	out := make(map[string]string, len(platformNumbers))
	if len(platformNumbers) == 0 {
		return out, nil
	}
	where, arg := `a.platform_account_number = ANY($1::text[])`, any(platformNumbers)
	if len(platformNumbers) == 1 { // a status read: planned once (see landedAccounts)
		where, arg = `a.platform_account_number = $1::text`, platformNumbers[0]
	}
	rows, err := db.readSQL.QueryContext(ctx, `
		SELECT a.id, a.platform_account_number, d.digest
		  FROM accounts a LEFT JOIN landed_digests d ON d.account_id = a.id AND d.version = a.landed_version
		 WHERE `+where, arg)
	if err != nil {
		return nil, fmt.Errorf("landed digests: %w", err)
	}
	var stale []int64
	for rows.Next() {
		var id int64
		var num string
		var digest *string
		if err := rows.Scan(&id, &num, &digest); err != nil {
			rows.Close()
			return nil, fmt.Errorf("landed digests: %w", err)
		}
		if digest != nil {
			out[num] = *digest
		} else {
			stale = append(stale, id)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("landed digests: %w", err)
	}
	if len(stale) == 0 {
		return out, nil
	}
	landed, err := db.landedAccounts(ctx, stale)
	if err != nil {
		return nil, err
	}
	for _, l := range landed {
		out[l.PlatformAccountNumber] = l.Digest
	}
	db.keepLater(landed)
	return out, nil
}
