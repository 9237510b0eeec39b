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
// made 5,000 accounts take minutes). landed_digest is computed on the first
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
	rows, err := db.readSQL.QueryContext(ctx, `
		SELECT a.id, a.platform_account_number, d.digest
		  FROM accounts a LEFT JOIN landed_digests d ON d.account_id = a.id AND d.version = a.landed_version
		 WHERE a.platform_account_number = ANY($1::text[])`, platformNumbers)
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
