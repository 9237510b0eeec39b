package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// The creation transaction writes each table once, whatever the number of
// accounts: the rows of every account go into one column array per column,
// and one INSERT ... SELECT FROM unnest(...) per table stores them, in the
// order they were added. The ids of every row another row points at are
// drawn from their sequences before the transaction (reserveIDs), so each
// child row carries its parent's id, and the statements need neither joins
// nor RETURNING: they are plain inserts, sent together in one round trip.
// One account (the per-account path) and a bulk job's hundred take the same
// statements; only the arrays are longer.
//
// Amounts go as text and are cast by Postgres, so a value is rounded or
// refused exactly as the column would refuse it written directly.

// Parent references are positions in the parent's columns (acc: an
// account's, cust: a customer's, ...), turned into ids once the ids are
// drawn.

type accountCols struct {
	num, external, typ, details, transfer, balance []string
	supplier, process                              []int64
	created                                        []time.Time
	id                                             []int64
}

type customerCols struct {
	given, family, title, salutation, email, mobile, landline, prefs []string
	acc, position                                                    []int32
	dob                                                              []*time.Time
	id                                                               []int64
}

type psrCols struct {
	code     []string
	customer []int32
	from, to []*time.Time
}

type addressCols struct {
	a1, a2, a3, a4, a5, postcode []string
	acc, position                []int32
	from                         []*time.Time
	id                           []int64
}

type meterPointCols struct {
	mpxn, fuel   []string
	acc, address []int32
	start        []time.Time
	end          []*time.Time
	profile      []*int32
	ssc, eac     []*string
	id           []int64
}

type agreementCols struct {
	meterPoint      []int32
	tariff, product []*string
	validFrom       []time.Time
	validTo         []*time.Time
}

type meterCols struct {
	serial          []string
	acc, meterPoint []int32
	id              []int64
}

type registerCols struct {
	register, rate []string
	meter, digits  []int32
}

type readingCols struct {
	register, value, typ []string
	meter                []int32
	date                 []time.Time
}

type statementCols struct {
	acc      []int32
	from, to []time.Time
	id       []int64
}

type transactionCols struct {
	id, typ, amount, effect, description, data []string
	acc, statement                             []int32
	date                                       []time.Time
	original                                   []*time.Time
}

type noteCols struct {
	body, paths []string
	acc         []int32
	pinned      []bool
	unpin       []*time.Time
	created     []time.Time
}

type scheduleCols struct {
	means, frequency, amount []string
	acc, position            []int32
	start                    []time.Time
}

type instructionCols struct {
	vendor, reference, typ []string
	acc                    []int32
	brand, last4, mandate  []*string
	expMonth, expYear      []*int32
}

// welcomeCols: the outbox, one e-mail per customer with an address of an
// account whose supplier sends them, in customer order.
type welcomeCols struct {
	acc, customer []int32
	email         []string
	id            []int64
}

// creationRows holds every row of a set of accounts, column by column.
type creationRows struct {
	accounts     accountCols
	customers    customerCols
	psr          psrCols
	addresses    addressCols
	meterPoints  meterPointCols
	agreements   agreementCols
	meters       meterCols
	registers    registerCols
	readings     readingCols
	statements   statementCols
	transactions transactionCols
	notes        noteCols
	schedules    scheduleCols
	instructions instructionCols
	welcome      welcomeCols
}

// add appends every row of one account, to be created with platform number
// num.
func (r *creationRows) add(in CreationInput, num string) error {
	a := in.Account
	details, err := accountDetails(a)
	if err != nil {
		return err
	}
	customers, err := customerRows(0, a.Customers)
	if err != nil {
		return err
	}
	from, to := a.FirstStatementPeriod(dataimport.DateOf(in.Now))
	txs, _, moved, err := transactionRows(0, 0, from, to, a.CurrentStatementTransactions, true)
	if err != nil {
		return err
	}
	notes := a.Notes
	if moved > 0 {
		notes = append(notes[:len(notes):len(notes)], dataimport.MovedNote(moved, from, to))
	}
	noteRs, err := noteRows(0, notes, in.Now)
	if err != nil {
		return err
	}
	if err := verifiedInstructions(a, in.Instructions); err != nil {
		return err
	}

	ac := &r.accounts
	acc := int32(len(ac.num))
	ac.num = append(ac.num, num)
	ac.supplier = append(ac.supplier, in.Supplier.ID)
	ac.process = append(ac.process, in.ProcessID)
	ac.external = append(ac.external, a.ExternalAccountNumber)
	ac.typ = append(ac.typ, string(a.Type()))
	ac.details = append(ac.details, string(details))
	ac.transfer = append(ac.transfer, a.OpeningBalance().String())
	ac.balance = append(ac.balance, openingBalance(a).String())
	ac.created = append(ac.created, in.Now)

	cc, pc, wc := &r.customers, &r.psr, &r.welcome
	welcome := in.Supplier.WelcomeEmail && !in.DryRun
	for i, c := range customers {
		cust := int32(len(cc.acc))
		cc.acc = append(cc.acc, acc)
		cc.position = append(cc.position, int32(c.Position))
		cc.given = append(cc.given, c.GivenName)
		cc.family = append(cc.family, c.FamilyName)
		cc.title = append(cc.title, c.Title)
		cc.salutation = append(cc.salutation, c.Salutation)
		cc.email = append(cc.email, c.Email)
		cc.mobile = append(cc.mobile, c.Mobile)
		cc.landline = append(cc.landline, c.Landline)
		cc.dob = append(cc.dob, c.DateOfBirth)
		cc.prefs = append(cc.prefs, c.CustomerPreferences)
		for _, e := range a.Customers[i].PSR {
			pc.customer = append(pc.customer, cust)
			pc.code = append(pc.code, e.Code)
			pc.from = append(pc.from, dateTime(e.EffectiveFrom))
			pc.to = append(pc.to, dateTime(e.EffectiveTo))
		}
		if welcome && c.Email != "" {
			wc.acc = append(wc.acc, acc)
			wc.customer = append(wc.customer, cust)
			wc.email = append(wc.email, c.Email)
		}
	}
	for i, sa := range a.SupplyAddresses {
		r.addAddress(acc, i, sa)
	}
	st := &r.statements
	stm := int32(len(st.acc))
	st.acc = append(st.acc, acc)
	st.from = append(st.from, from.Time())
	st.to = append(st.to, to.Time())
	tc := &r.transactions
	for _, t := range txs {
		tc.acc = append(tc.acc, acc)
		tc.statement = append(tc.statement, stm)
		tc.id = append(tc.id, t.TransactionID)
		tc.typ = append(tc.typ, t.Type)
		tc.date = append(tc.date, t.TransactionDate)
		tc.original = append(tc.original, t.OriginalDate)
		tc.amount = append(tc.amount, t.Amount.String())
		tc.effect = append(tc.effect, t.BalanceEffect.String())
		tc.description = append(tc.description, t.Description)
		tc.data = append(tc.data, t.Data)
	}
	nc := &r.notes
	for _, n := range noteRs {
		nc.acc = append(nc.acc, acc)
		nc.body = append(nc.body, n.Body)
		nc.paths = append(nc.paths, n.DocumentPaths)
		nc.pinned = append(nc.pinned, n.IsPinned)
		nc.unpin = append(nc.unpin, n.UnpinAt)
		nc.created = append(nc.created, n.CreatedAt)
	}
	sc := &r.schedules
	for i, ps := range a.PaymentSchedules {
		sc.acc = append(sc.acc, acc)
		sc.position = append(sc.position, int32(i))
		sc.means = append(sc.means, string(ps.Means))
		sc.start = append(sc.start, ps.StartDate.Time())
		sc.frequency = append(sc.frequency, string(ps.Frequency))
		sc.amount = append(sc.amount, ps.Amount.Decimal.String())
	}
	ic := &r.instructions
	for _, pi := range in.Instructions {
		d := storableDetails(pi.Details)
		ic.acc = append(ic.acc, acc)
		ic.vendor = append(ic.vendor, pi.Vendor)
		ic.reference = append(ic.reference, pi.Reference)
		ic.typ = append(ic.typ, string(pi.Type))
		ic.brand = append(ic.brand, nullIfZero(d.CardBrand))
		ic.last4 = append(ic.last4, nullIfZero(d.CardLast4))
		ic.expMonth = append(ic.expMonth, int32Ptr(nullIfZero(d.CardExpMonth)))
		ic.expYear = append(ic.expYear, int32Ptr(nullIfZero(d.CardExpYear)))
		ic.mandate = append(ic.mandate, nullIfZero(d.MandateStatus))
	}
	return nil
}

// addAddress appends a supply address with its meter points, their
// agreements and meters, and the meters' registers and readings.
func (r *creationRows) addAddress(acc int32, position int, sa dataimport.SupplyAddress) {
	ad := &r.addresses
	addr := int32(len(ad.acc))
	ad.acc = append(ad.acc, acc)
	ad.position = append(ad.position, int32(position))
	ad.a1 = append(ad.a1, sa.SupplyAddress1)
	ad.a2 = append(ad.a2, deref(sa.SupplyAddress2))
	ad.a3 = append(ad.a3, deref(sa.SupplyAddress3))
	ad.a4 = append(ad.a4, deref(sa.SupplyAddress4))
	ad.a5 = append(ad.a5, deref(sa.SupplyAddress5))
	ad.postcode = append(ad.postcode, sa.SupplyPostcode)
	ad.from = append(ad.from, dateTime(sa.CustomerAtSupplyAddressFromDate))
	for _, mp := range sa.MeterPoints {
		m := &r.meterPoints
		point := int32(len(m.acc))
		m.acc = append(m.acc, acc)
		m.address = append(m.address, addr)
		m.mpxn = append(m.mpxn, mp.MPXN)
		m.fuel = append(m.fuel, string(mp.Fuel))
		m.start = append(m.start, mp.SupplyStartDate.Time())
		m.end = append(m.end, dateTime(mp.SupplyEndDate))
		m.profile = append(m.profile, int32Ptr(mp.ProfileClass))
		m.ssc = append(m.ssc, mp.SSC)
		m.eac = append(m.eac, decimalText(mp.EstimatedAnnualConsumption))
		for _, ag := range mp.Agreements {
			g := &r.agreements
			g.meterPoint = append(g.meterPoint, point)
			g.tariff = append(g.tariff, ag.TariffCode)
			g.product = append(g.product, ag.ProductCode)
			g.validFrom = append(g.validFrom, ag.ValidFrom.Time())
			g.validTo = append(g.validTo, dateTime(ag.ValidTo))
		}
		for _, me := range mp.Meters {
			mc := &r.meters
			meter := int32(len(mc.acc))
			mc.acc = append(mc.acc, acc)
			mc.meterPoint = append(mc.meterPoint, point)
			mc.serial = append(mc.serial, me.SerialNumber)
			for _, rg := range me.Registers {
				rc := &r.registers
				rc.meter = append(rc.meter, meter)
				rc.register = append(rc.register, rg.RegisterID)
				rc.digits = append(rc.digits, int32(rg.NumberOfDigits))
				rc.rate = append(rc.rate, deref(rg.RateType))
			}
			for _, rd := range me.TransferReadings {
				tr := &r.readings
				tr.meter = append(tr.meter, meter)
				tr.register = append(tr.register, rd.RegisterID)
				tr.date = append(tr.date, rd.ReadingDate.Time())
				tr.value = append(tr.value, rd.ReadingValue.String())
				tr.typ = append(tr.typ, deref(rd.ReadingType))
			}
		}
	}
}

// reserveIDsSQL draws the ids of every row another row points at (and of
// the welcome e-mails, which the answer names), each table's in the order
// drawn, which is ascending, as the rows are added. Drawn ids that end up
// unused (a rolled-back transaction) are gaps, as any sequence leaves.
const reserveIDsSQL = `SELECT
	ARRAY(SELECT nextval('accounts_id_seq') FROM generate_series(1, $1::int)),
	ARRAY(SELECT nextval('account_customers_id_seq') FROM generate_series(1, $2::int)),
	ARRAY(SELECT nextval('supply_addresses_id_seq') FROM generate_series(1, $3::int)),
	ARRAY(SELECT nextval('meter_points_id_seq') FROM generate_series(1, $4::int)),
	ARRAY(SELECT nextval('meters_id_seq') FROM generate_series(1, $5::int)),
	ARRAY(SELECT nextval('statements_id_seq') FROM generate_series(1, $6::int)),
	ARRAY(SELECT nextval('welcome_emails_id_seq') FROM generate_series(1, $7::int))`

// reserveIDs draws the rows' ids (reserveIDsSQL) on c.
func (r *creationRows) reserveIDs(ctx context.Context, c *pgx.Conn) error {
	err := c.QueryRow(ctx, reserveIDsSQL, len(r.accounts.num), len(r.customers.acc), len(r.addresses.acc),
		len(r.meterPoints.acc), len(r.meters.acc), len(r.statements.acc), len(r.welcome.acc)).Scan(
		&r.accounts.id, &r.customers.id, &r.addresses.id, &r.meterPoints.id, &r.meters.id, &r.statements.id, &r.welcome.id)
	if err != nil {
		return fmt.Errorf("create account: draw ids: %w", err)
	}
	return nil
}

// idsOf maps positions in a parent's columns to the parent's ids.
func idsOf(parent []int64, at []int32) []int64 {
	out := make([]int64, len(at))
	for i, k := range at {
		out[i] = parent[k]
	}
	return out
}

// queue adds the set's statements to b, parents before children (each
// foreign key is checked at the end of its statement), and fills res[i]
// (the i-th account added) with its ids. A table with no rows gets no
// statement; each table's text never changes, so each is prepared once per
// connection.
func (r *creationRows) queue(b *pgx.Batch, res []*CreationResult) {
	ac, cu, ps, ad, mp, ag := &r.accounts, &r.customers, &r.psr, &r.addresses, &r.meterPoints, &r.agreements
	me, rg, rd, st, tx, no := &r.meters, &r.registers, &r.readings, &r.statements, &r.transactions, &r.notes
	sc, in, we := &r.schedules, &r.instructions, &r.welcome
	insert := func(n int, q string, args ...any) {
		if n > 0 {
			b.Queue(q, args...)
		}
	}
	insert(len(ac.id), `INSERT INTO accounts (id, platform_account_number, supplier_id, import_process_id, external_account_number,
			account_type, details, transfer_balance, balance, created_at)
		SELECT id, num, supplier, process, external, typ, details::jsonb, transfer::numeric, balance::numeric, created
		  FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::timestamptz[])
		       AS u(id, num, supplier, process, external, typ, details, transfer, balance, created)`,
		ac.id, ac.num, ac.supplier, ac.process, ac.external, ac.typ, ac.details, ac.transfer, ac.balance, ac.created)
	insert(len(cu.id), `INSERT INTO account_customers (id, account_id, position, given_name, family_name, title, salutation, email,
			mobile, landline, date_of_birth, customer_preferences)
		SELECT id, account, position, given, family, title, salutation, email, mobile, landline, dob, prefs::jsonb
		  FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
		       $10::text[], $11::date[], $12::text[])
		       AS u(id, account, position, given, family, title, salutation, email, mobile, landline, dob, prefs)`,
		cu.id, idsOf(ac.id, cu.acc), cu.position, cu.given, cu.family, cu.title, cu.salutation, cu.email, cu.mobile, cu.landline, cu.dob, cu.prefs)
	insert(len(ps.customer), `INSERT INTO customer_psr (customer_id, code, effective_from, effective_to)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::date[], $4::date[])`,
		idsOf(cu.id, ps.customer), ps.code, ps.from, ps.to)
	insert(len(ad.id), `INSERT INTO supply_addresses (id, account_id, position, supply_address1, supply_address2, supply_address3,
			supply_address4, supply_address5, supply_postcode, customer_at_supply_address_from_date)
		SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
		       $9::text[], $10::date[])`,
		ad.id, idsOf(ac.id, ad.acc), ad.position, ad.a1, ad.a2, ad.a3, ad.a4, ad.a5, ad.postcode, ad.from)
	insert(len(mp.id), `INSERT INTO meter_points (id, account_id, supply_address_id, mpxn, fuel, supply_start_date, supply_end_date,
			profile_class, ssc, estimated_annual_consumption)
		SELECT id, account, address, mpxn, fuel, sstart, send, profile, ssc, eac::numeric
		  FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::date[], $7::date[], $8::int[], $9::text[], $10::text[])
		       AS u(id, account, address, mpxn, fuel, sstart, send, profile, ssc, eac)`,
		mp.id, idsOf(ac.id, mp.acc), idsOf(ad.id, mp.address), mp.mpxn, mp.fuel, mp.start, mp.end, mp.profile, mp.ssc, mp.eac)
	insert(len(ag.meterPoint), `INSERT INTO agreements (meter_point_id, tariff_code, product_code, valid_from, valid_to)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::date[], $5::date[])`,
		idsOf(mp.id, ag.meterPoint), ag.tariff, ag.product, ag.validFrom, ag.validTo)
	insert(len(me.id), `INSERT INTO meters (id, account_id, meter_point_id, serial_number)
		SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[])`,
		me.id, idsOf(ac.id, me.acc), idsOf(mp.id, me.meterPoint), me.serial)
	insert(len(rg.meter), `INSERT INTO meter_registers (meter_id, register_id, number_of_digits, rate_type)
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::int[], $4::text[])`,
		idsOf(me.id, rg.meter), rg.register, rg.digits, rg.rate)
	insert(len(rd.meter), `INSERT INTO transfer_readings (meter_id, register_id, reading_date, reading_value, reading_type)
		SELECT meter, register, rdate, value::numeric, typ
		  FROM unnest($1::bigint[], $2::text[], $3::date[], $4::text[], $5::text[]) AS u(meter, register, rdate, value, typ)`,
		idsOf(me.id, rd.meter), rd.register, rd.date, rd.value, rd.typ)
	insert(len(st.id), `INSERT INTO statements (id, account_id, period_from, period_to)
		SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::date[], $4::date[])`,
		st.id, idsOf(ac.id, st.acc), st.from, st.to)
	insert(len(tx.acc), `INSERT INTO account_transactions (account_id, statement_id, transaction_id, type, transaction_date,
			original_date, amount, balance_effect, description, data)
		SELECT account, statement, id, typ, tdate, odate, amount::numeric, effect::numeric, description, data::jsonb
		  FROM unnest($1::bigint[], $2::bigint[], $3::text[], $4::text[], $5::date[], $6::date[], $7::text[], $8::text[], $9::text[], $10::text[])
		       AS u(account, statement, id, typ, tdate, odate, amount, effect, description, data)`,
		idsOf(ac.id, tx.acc), idsOf(st.id, tx.statement), tx.id, tx.typ, tx.date, tx.original, tx.amount, tx.effect, tx.description, tx.data)
	insert(len(no.acc), `INSERT INTO account_notes (account_id, body, document_paths, is_pinned, unpin_at, created_at)
		SELECT account, body, paths::jsonb, pinned, unpin, created
		  FROM unnest($1::bigint[], $2::text[], $3::text[], $4::boolean[], $5::timestamptz[], $6::timestamptz[])
		       AS u(account, body, paths, pinned, unpin, created)`,
		idsOf(ac.id, no.acc), no.body, no.paths, no.pinned, no.unpin, no.created)
	insert(len(sc.acc), `INSERT INTO account_payment_schedules (account_id, position, means, start_date, frequency, amount)
		SELECT account, position, means, start, frequency, amount::numeric
		  FROM unnest($1::bigint[], $2::int[], $3::text[], $4::date[], $5::text[], $6::text[])
		       AS u(account, position, means, start, frequency, amount)`,
		idsOf(ac.id, sc.acc), sc.position, sc.means, sc.start, sc.frequency, sc.amount)
	insert(len(in.acc), `INSERT INTO payment_instructions (account_id, vendor, reference, type, status,
			card_brand, card_last4, card_exp_month, card_exp_year, mandate_status)
		SELECT account, vendor, reference, typ, 'ACTIVE', brand, last4, expm, expy, mandate
		  FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::int[], $8::int[], $9::text[])
		       AS u(account, vendor, reference, typ, brand, last4, expm, expy, mandate)`,
		idsOf(ac.id, in.acc), in.vendor, in.reference, in.typ, in.brand, in.last4, in.expMonth, in.expYear, in.mandate)
	insert(len(we.id), `INSERT INTO welcome_emails (id, account_id, customer_id, email)
		SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[])`,
		we.id, idsOf(ac.id, we.acc), idsOf(cu.id, we.customer), we.email)
	// Complete the processes (by primary key, whatever the table's size),
	// and record their attempts and events, from the accounts' columns
	// (process, platform number, creation time).
	insert(len(ac.id), `WITH u AS (
		SELECT * FROM unnest($1::bigint[], $2::text[], $3::timestamptz[]) AS u(process, num, at)
	), done AS (
		UPDATE import_processes p SET status = 'COMPLETED', v2_status = 'PROCESSED', platform_account_number = u.num,
		       account_created_at = u.at, latest_error = NULL, dry_run = false, modified_at = now()
		  FROM u WHERE p.id = u.process AND p.id = ANY($1::bigint[])
		RETURNING p.id, p.attempt, p.platform_account_number
	), att AS (
		INSERT INTO import_attempts (process_id, attempt, outcome, platform_account_number)
		SELECT id, attempt, 'COMPLETED', platform_account_number FROM done
	)
	INSERT INTO import_process_events (process_id, event, data)
	SELECT id, $4::text, jsonb_build_object('attempt', attempt, 'platform_account_number', platform_account_number)
	  FROM done ORDER BY id`, ac.process, ac.num, ac.created, dataimport.EventProcessed)
	for i, x := range res {
		x.AccountID = ac.id[i]
	}
	for i, k := range we.acc {
		res[k].WelcomeEmailIDs = append(res[k].WelcomeEmailIDs, we.id[i])
	}
}

func int32Ptr[T ~int](v *T) *int32 {
	if v == nil {
		return nil
	}
	n := int32(*v)
	return &n
}

func decimalText(d *decimal.Decimal) *string {
	if d == nil {
		return nil
	}
	s := d.String()
	return &s
}
