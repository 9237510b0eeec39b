package postgres

import (
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// The creation transaction writes each table once, whatever the number of
// accounts: the rows of every account go into one column array per column,
// and one INSERT ... SELECT FROM unnest(...) per table stores them. A child
// row finds its parent by the parent's natural key inside the account
// (platform number, customer and address position, MPxN, meter serial, the
// open statement), all unique and indexed, so no id has to travel back to
// us between statements and the whole transaction stays one round trip.
// One account (the per-account path) and a bulk job's hundred take the same
// statements; only the arrays are longer.
//
// Amounts go as text and are cast by Postgres, so a value is rounded or
// refused exactly as the column would refuse it written directly.

type accountCols struct {
	num, external, typ, details, transfer, balance []string
	supplier, process                              []int64
	created                                        []time.Time
}

type customerCols struct {
	num, given, family, title, salutation, email, mobile, landline, prefs []string
	position                                                              []int32
	dob                                                                   []*time.Time
}

type psrCols struct {
	num, code []string
	customer  []int32
	from, to  []*time.Time
}

type addressCols struct {
	num, a1, a2, a3, a4, a5, postcode []string
	position                          []int32
	from                              []*time.Time
}

type meterPointCols struct {
	num, mpxn, fuel []string
	address         []int32
	start           []time.Time
	end             []*time.Time
	profile         []*int32
	ssc, eac        []*string
}

type agreementCols struct {
	num, mpxn       []string
	tariff, product []*string
	validFrom       []time.Time
	validTo         []*time.Time
}

type meterCols struct{ num, mpxn, serial []string }

type registerCols struct {
	num, serial, register, rate []string
	digits                      []int32
}

type readingCols struct {
	num, serial, register, value, typ []string
	date                              []time.Time
}

type statementCols struct {
	num      []string
	from, to []time.Time
}

type transactionCols struct {
	num, id, typ, amount, effect, description, data []string
	date                                            []time.Time
	original                                        []*time.Time
}

type noteCols struct {
	num, body, paths []string
	pinned           []bool
	unpin            []*time.Time
	created          []time.Time
}

type scheduleCols struct {
	num, means, frequency, amount []string
	position                      []int32
	start                         []time.Time
}

type instructionCols struct {
	num, vendor, reference, typ []string
	brand, last4, mandate       []*string
	expMonth, expYear           []*int32
}

type doneCols struct {
	process []int64
	num     []string
	at      []time.Time
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
	welcome      []string // platform numbers whose customers get the welcome e-mail
	done         doneCols
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
	ac.num = append(ac.num, num)
	ac.supplier = append(ac.supplier, in.Supplier.ID)
	ac.process = append(ac.process, in.ProcessID)
	ac.external = append(ac.external, a.ExternalAccountNumber)
	ac.typ = append(ac.typ, string(a.Type()))
	ac.details = append(ac.details, string(details))
	ac.transfer = append(ac.transfer, a.OpeningBalance().String())
	ac.balance = append(ac.balance, openingBalance(a).String())
	ac.created = append(ac.created, in.Now)

	cc, pc := &r.customers, &r.psr
	for i, c := range customers {
		cc.num = append(cc.num, num)
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
			pc.num = append(pc.num, num)
			pc.customer = append(pc.customer, int32(c.Position))
			pc.code = append(pc.code, e.Code)
			pc.from = append(pc.from, dateTime(e.EffectiveFrom))
			pc.to = append(pc.to, dateTime(e.EffectiveTo))
		}
	}
	for i, sa := range a.SupplyAddresses {
		r.addAddress(num, i, sa)
	}
	st := &r.statements
	st.num = append(st.num, num)
	st.from = append(st.from, from.Time())
	st.to = append(st.to, to.Time())
	tc := &r.transactions
	for _, t := range txs {
		tc.num = append(tc.num, num)
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
		nc.num = append(nc.num, num)
		nc.body = append(nc.body, n.Body)
		nc.paths = append(nc.paths, n.DocumentPaths)
		nc.pinned = append(nc.pinned, n.IsPinned)
		nc.unpin = append(nc.unpin, n.UnpinAt)
		nc.created = append(nc.created, n.CreatedAt)
	}
	sc := &r.schedules
	for i, ps := range a.PaymentSchedules {
		sc.num = append(sc.num, num)
		sc.position = append(sc.position, int32(i))
		sc.means = append(sc.means, string(ps.Means))
		sc.start = append(sc.start, ps.StartDate.Time())
		sc.frequency = append(sc.frequency, string(ps.Frequency))
		sc.amount = append(sc.amount, ps.Amount.Decimal.String())
	}
	ic := &r.instructions
	for _, pi := range in.Instructions {
		d := storableDetails(pi.Details)
		ic.num = append(ic.num, num)
		ic.vendor = append(ic.vendor, pi.Vendor)
		ic.reference = append(ic.reference, pi.Reference)
		ic.typ = append(ic.typ, string(pi.Type))
		ic.brand = append(ic.brand, nullIfZero(d.CardBrand))
		ic.last4 = append(ic.last4, nullIfZero(d.CardLast4))
		ic.expMonth = append(ic.expMonth, int32Ptr(nullIfZero(d.CardExpMonth)))
		ic.expYear = append(ic.expYear, int32Ptr(nullIfZero(d.CardExpYear)))
		ic.mandate = append(ic.mandate, nullIfZero(d.MandateStatus))
	}
	if in.Supplier.WelcomeEmail && !in.DryRun {
		r.welcome = append(r.welcome, num)
	}
	dc := &r.done
	dc.process = append(dc.process, in.ProcessID)
	dc.num = append(dc.num, num)
	dc.at = append(dc.at, in.Now)
	return nil
}

// addAddress appends a supply address with its meter points, their
// agreements and meters, and the meters' registers and readings.
func (r *creationRows) addAddress(num string, position int, sa dataimport.SupplyAddress) {
	ad := &r.addresses
	ad.num = append(ad.num, num)
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
		m.num = append(m.num, num)
		m.address = append(m.address, int32(position))
		m.mpxn = append(m.mpxn, mp.MPXN)
		m.fuel = append(m.fuel, string(mp.Fuel))
		m.start = append(m.start, mp.SupplyStartDate.Time())
		m.end = append(m.end, dateTime(mp.SupplyEndDate))
		m.profile = append(m.profile, int32Ptr(mp.ProfileClass))
		m.ssc = append(m.ssc, mp.SSC)
		m.eac = append(m.eac, decimalText(mp.EstimatedAnnualConsumption))
		for _, ag := range mp.Agreements {
			g := &r.agreements
			g.num = append(g.num, num)
			g.mpxn = append(g.mpxn, mp.MPXN)
			g.tariff = append(g.tariff, ag.TariffCode)
			g.product = append(g.product, ag.ProductCode)
			g.validFrom = append(g.validFrom, ag.ValidFrom.Time())
			g.validTo = append(g.validTo, dateTime(ag.ValidTo))
		}
		for _, me := range mp.Meters {
			mc := &r.meters
			mc.num = append(mc.num, num)
			mc.mpxn = append(mc.mpxn, mp.MPXN)
			mc.serial = append(mc.serial, me.SerialNumber)
			for _, rg := range me.Registers {
				rc := &r.registers
				rc.num = append(rc.num, num)
				rc.serial = append(rc.serial, me.SerialNumber)
				rc.register = append(rc.register, rg.RegisterID)
				rc.digits = append(rc.digits, int32(rg.NumberOfDigits))
				rc.rate = append(rc.rate, deref(rg.RateType))
			}
			for _, rd := range me.TransferReadings {
				tr := &r.readings
				tr.num = append(tr.num, num)
				tr.serial = append(tr.serial, me.SerialNumber)
				tr.register = append(tr.register, rd.RegisterID)
				tr.date = append(tr.date, rd.ReadingDate.Time())
				tr.value = append(tr.value, rd.ReadingValue.String())
				tr.typ = append(tr.typ, deref(rd.ReadingType))
			}
		}
	}
}

// statement is the set's one INSERT: a chain of data-modifying CTEs,
// parents before children, each child joined to its parent's RETURNING rows
// (never to the tables, so its plan does not depend on how big they are).
// Every array is always passed, empty or not, so the text never changes and
// the prepared statement is planned once per connection. It answers one row
// per account (kind 0: id, platform number) and per welcome e-mail (kind 1:
// id, account id).
func (r *creationRows) statement() (string, []any) {
	var args []any
	p := func(v any, typ string) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args)) + "::" + typ
	}
	ac, cu, ps, ad, mp, ag := &r.accounts, &r.customers, &r.psr, &r.addresses, &r.meterPoints, &r.agreements
	me, rg, rd, st, tx, no := &r.meters, &r.registers, &r.readings, &r.statements, &r.transactions, &r.notes
	sc, in, d := &r.schedules, &r.instructions, &r.done
	q := `WITH acc AS (
		INSERT INTO accounts (platform_account_number, supplier_id, import_process_id, external_account_number,
			account_type, details, transfer_balance, balance, created_at)
		SELECT num, supplier, process, external, typ, details::jsonb, transfer::numeric, balance::numeric, created
		  FROM unnest(` + p(ac.num, "text[]") + `, ` + p(ac.supplier, "bigint[]") + `, ` + p(ac.process, "bigint[]") + `, ` +
		p(ac.external, "text[]") + `, ` + p(ac.typ, "text[]") + `, ` + p(ac.details, "text[]") + `, ` + p(ac.transfer, "text[]") + `, ` +
		p(ac.balance, "text[]") + `, ` + p(ac.created, "timestamptz[]") + `)
		       WITH ORDINALITY AS u(num, supplier, process, external, typ, details, transfer, balance, created, ord)
		 ORDER BY ord
		RETURNING id, platform_account_number AS num
	), cust AS (
		INSERT INTO account_customers (account_id, position, given_name, family_name, title, salutation, email,
			mobile, landline, date_of_birth, customer_preferences)
		SELECT acc.id, u.position, u.given, u.family, u.title, u.salutation, u.email, u.mobile, u.landline, u.dob, u.prefs::jsonb
		  FROM unnest(` + p(cu.num, "text[]") + `, ` + p(cu.position, "int[]") + `, ` + p(cu.given, "text[]") + `, ` +
		p(cu.family, "text[]") + `, ` + p(cu.title, "text[]") + `, ` + p(cu.salutation, "text[]") + `, ` + p(cu.email, "text[]") + `, ` +
		p(cu.mobile, "text[]") + `, ` + p(cu.landline, "text[]") + `, ` + p(cu.dob, "date[]") + `, ` + p(cu.prefs, "text[]") + `)
		       WITH ORDINALITY AS u(num, position, given, family, title, salutation, email, mobile, landline, dob, prefs, ord)
		  JOIN acc ON acc.num = u.num
		 ORDER BY u.ord
		RETURNING id, account_id, position, email
	), psr AS (
		INSERT INTO customer_psr (customer_id, code, effective_from, effective_to)
		SELECT cust.id, u.code, u.efrom, u.eto
		  FROM unnest(` + p(ps.num, "text[]") + `, ` + p(ps.customer, "int[]") + `, ` + p(ps.code, "text[]") + `, ` +
		p(ps.from, "date[]") + `, ` + p(ps.to, "date[]") + `) WITH ORDINALITY AS u(num, customer, code, efrom, eto, ord)
		  JOIN acc ON acc.num = u.num
		  JOIN cust ON cust.account_id = acc.id AND cust.position = u.customer
		 ORDER BY u.ord
	), addr AS (
		INSERT INTO supply_addresses (account_id, position, supply_address1, supply_address2, supply_address3,
			supply_address4, supply_address5, supply_postcode, customer_at_supply_address_from_date)
		SELECT acc.id, u.position, u.a1, u.a2, u.a3, u.a4, u.a5, u.postcode, u.efrom
		  FROM unnest(` + p(ad.num, "text[]") + `, ` + p(ad.position, "int[]") + `, ` + p(ad.a1, "text[]") + `, ` +
		p(ad.a2, "text[]") + `, ` + p(ad.a3, "text[]") + `, ` + p(ad.a4, "text[]") + `, ` + p(ad.a5, "text[]") + `, ` +
		p(ad.postcode, "text[]") + `, ` + p(ad.from, "date[]") + `)
		       WITH ORDINALITY AS u(num, position, a1, a2, a3, a4, a5, postcode, efrom, ord)
		  JOIN acc ON acc.num = u.num
		 ORDER BY u.ord
		RETURNING id, account_id, position
	), mp AS (
		INSERT INTO meter_points (account_id, supply_address_id, mpxn, fuel, supply_start_date, supply_end_date,
			profile_class, ssc, estimated_annual_consumption)
		SELECT acc.id, addr.id, u.mpxn, u.fuel, u.sstart, u.send, u.profile, u.ssc, u.eac::numeric
		  FROM unnest(` + p(mp.num, "text[]") + `, ` + p(mp.address, "int[]") + `, ` + p(mp.mpxn, "text[]") + `, ` +
		p(mp.fuel, "text[]") + `, ` + p(mp.start, "date[]") + `, ` + p(mp.end, "date[]") + `, ` + p(mp.profile, "int[]") + `, ` +
		p(mp.ssc, "text[]") + `, ` + p(mp.eac, "text[]") + `)
		       WITH ORDINALITY AS u(num, address, mpxn, fuel, sstart, send, profile, ssc, eac, ord)
		  JOIN acc ON acc.num = u.num
		  JOIN addr ON addr.account_id = acc.id AND addr.position = u.address
		 ORDER BY u.ord
		RETURNING id, account_id, mpxn
	), agr AS (
		INSERT INTO agreements (meter_point_id, tariff_code, product_code, valid_from, valid_to)
		SELECT mp.id, u.tariff, u.product, u.vfrom, u.vto
		  FROM unnest(` + p(ag.num, "text[]") + `, ` + p(ag.mpxn, "text[]") + `, ` + p(ag.tariff, "text[]") + `, ` +
		p(ag.product, "text[]") + `, ` + p(ag.validFrom, "date[]") + `, ` + p(ag.validTo, "date[]") + `)
		       WITH ORDINALITY AS u(num, mpxn, tariff, product, vfrom, vto, ord)
		  JOIN acc ON acc.num = u.num
		  JOIN mp ON mp.account_id = acc.id AND mp.mpxn = u.mpxn
		 ORDER BY u.ord
	), met AS (
		INSERT INTO meters (account_id, meter_point_id, serial_number)
		SELECT acc.id, mp.id, u.serial
		  FROM unnest(` + p(me.num, "text[]") + `, ` + p(me.mpxn, "text[]") + `, ` + p(me.serial, "text[]") + `)
		       WITH ORDINALITY AS u(num, mpxn, serial, ord)
		  JOIN acc ON acc.num = u.num
		  JOIN mp ON mp.account_id = acc.id AND mp.mpxn = u.mpxn
		 ORDER BY u.ord
		RETURNING id, account_id, serial_number
	), reg AS (
		INSERT INTO meter_registers (meter_id, register_id, number_of_digits, rate_type)
		SELECT met.id, u.register, u.digits, u.rate
		  FROM unnest(` + p(rg.num, "text[]") + `, ` + p(rg.serial, "text[]") + `, ` + p(rg.register, "text[]") + `, ` +
		p(rg.digits, "int[]") + `, ` + p(rg.rate, "text[]") + `) WITH ORDINALITY AS u(num, serial, register, digits, rate, ord)
		  JOIN acc ON acc.num = u.num
		  JOIN met ON met.account_id = acc.id AND met.serial_number = u.serial
		 ORDER BY u.ord
	), rdg AS (
		INSERT INTO transfer_readings (meter_id, register_id, reading_date, reading_value, reading_type)
		SELECT met.id, u.register, u.rdate, u.value::numeric, u.typ
		  FROM unnest(` + p(rd.num, "text[]") + `, ` + p(rd.serial, "text[]") + `, ` + p(rd.register, "text[]") + `, ` +
		p(rd.date, "date[]") + `, ` + p(rd.value, "text[]") + `, ` + p(rd.typ, "text[]") + `)
		       WITH ORDINALITY AS u(num, serial, register, rdate, value, typ, ord)
		  JOIN acc ON acc.num = u.num
		  JOIN met ON met.account_id = acc.id AND met.serial_number = u.serial
		 ORDER BY u.ord
	), stm AS (
		INSERT INTO statements (account_id, period_from, period_to)
		SELECT acc.id, u.pfrom, u.pto
		  FROM unnest(` + p(st.num, "text[]") + `, ` + p(st.from, "date[]") + `, ` + p(st.to, "date[]") + `)
		       WITH ORDINALITY AS u(num, pfrom, pto, ord)
		  JOIN acc ON acc.num = u.num
		 ORDER BY u.ord
		RETURNING id, account_id
	), txn AS (
		INSERT INTO account_transactions (account_id, statement_id, transaction_id, type, transaction_date,
			original_date, amount, balance_effect, description, data)
		SELECT acc.id, stm.id, u.id, u.typ, u.tdate, u.odate, u.amount::numeric, u.effect::numeric, u.description, u.data::jsonb
		  FROM unnest(` + p(tx.num, "text[]") + `, ` + p(tx.id, "text[]") + `, ` + p(tx.typ, "text[]") + `, ` +
		p(tx.date, "date[]") + `, ` + p(tx.original, "date[]") + `, ` + p(tx.amount, "text[]") + `, ` + p(tx.effect, "text[]") + `, ` +
		p(tx.description, "text[]") + `, ` + p(tx.data, "text[]") + `)
		       WITH ORDINALITY AS u(num, id, typ, tdate, odate, amount, effect, description, data, ord)
		  JOIN acc ON acc.num = u.num
		  JOIN stm ON stm.account_id = acc.id
		 ORDER BY u.ord
	), nts AS (
		INSERT INTO account_notes (account_id, body, document_paths, is_pinned, unpin_at, created_at)
		SELECT acc.id, u.body, u.paths::jsonb, u.pinned, u.unpin, u.created
		  FROM unnest(` + p(no.num, "text[]") + `, ` + p(no.body, "text[]") + `, ` + p(no.paths, "text[]") + `, ` +
		p(no.pinned, "boolean[]") + `, ` + p(no.unpin, "timestamptz[]") + `, ` + p(no.created, "timestamptz[]") + `)
		       WITH ORDINALITY AS u(num, body, paths, pinned, unpin, created, ord)
		  JOIN acc ON acc.num = u.num
		 ORDER BY u.ord
	), sch AS (
		INSERT INTO account_payment_schedules (account_id, position, means, start_date, frequency, amount)
		SELECT acc.id, u.position, u.means, u.start, u.frequency, u.amount::numeric
		  FROM unnest(` + p(sc.num, "text[]") + `, ` + p(sc.position, "int[]") + `, ` + p(sc.means, "text[]") + `, ` +
		p(sc.start, "date[]") + `, ` + p(sc.frequency, "text[]") + `, ` + p(sc.amount, "text[]") + `)
		       WITH ORDINALITY AS u(num, position, means, start, frequency, amount, ord)
		  JOIN acc ON acc.num = u.num
		 ORDER BY u.ord
	), ins AS (
		INSERT INTO payment_instructions (account_id, vendor, reference, type, status,
			card_brand, card_last4, card_exp_month, card_exp_year, mandate_status)
		SELECT acc.id, u.vendor, u.reference, u.typ, 'ACTIVE', u.brand, u.last4, u.expm, u.expy, u.mandate
		  FROM unnest(` + p(in.num, "text[]") + `, ` + p(in.vendor, "text[]") + `, ` + p(in.reference, "text[]") + `, ` +
		p(in.typ, "text[]") + `, ` + p(in.brand, "text[]") + `, ` + p(in.last4, "text[]") + `, ` + p(in.expMonth, "int[]") + `, ` +
		p(in.expYear, "int[]") + `, ` + p(in.mandate, "text[]") + `)
		       WITH ORDINALITY AS u(num, vendor, reference, typ, brand, last4, expm, expy, mandate, ord)
		  JOIN acc ON acc.num = u.num
		 ORDER BY u.ord
	), wel AS (
		-- The outbox: one e-mail per customer with an address, in order.
		INSERT INTO welcome_emails (account_id, customer_id, email)
		SELECT cust.account_id, cust.id, cust.email
		  FROM cust JOIN acc ON acc.id = cust.account_id
		 WHERE acc.num = ANY(` + p(r.welcome, "text[]") + `) AND cust.email <> ''
		 ORDER BY cust.account_id, cust.position
		RETURNING id, account_id
	), u AS (
		SELECT * FROM unnest(` + p(d.process, "bigint[]") + `, ` + p(d.num, "text[]") + `, ` + p(d.at, "timestamptz[]") + `)
		       AS u(process, num, at)
	), done AS (
		-- Complete the processes (by primary key, whatever the table's size),
		-- and record their attempts and events.
		UPDATE import_processes p SET status = 'COMPLETED', v2_status = 'PROCESSED', platform_account_number = u.num,
		       account_created_at = u.at, latest_error = NULL, dry_run = false, modified_at = now()
		  FROM u WHERE p.id = u.process AND p.id = ANY(` + p(d.process, "bigint[]") + `)
		RETURNING p.id, p.attempt, p.platform_account_number
	), att AS (
		INSERT INTO import_attempts (process_id, attempt, outcome, platform_account_number)
		SELECT id, attempt, 'COMPLETED', platform_account_number FROM done
	), evt AS (
		INSERT INTO import_process_events (process_id, event, data)
		SELECT id, ` + p(dataimport.EventProcessed, "text") + `, jsonb_build_object('attempt', attempt, 'platform_account_number', platform_account_number)
		  FROM done ORDER BY id
	)
	SELECT 0, id, id, num FROM acc
	UNION ALL
	SELECT 1, id, account_id, '' FROM wel`
	return q, args
}

// queue adds the set's statement to b; res[i] (the i-th account added) is
// filled in as its answer is read.
func (r *creationRows) queue(b *pgx.Batch, res []*CreationResult) {
	byNumber := make(map[string]*CreationResult, len(res))
	for _, x := range res {
		byNumber[x.PlatformAccountNumber] = x
	}
	q, args := r.statement()
	b.Queue(q, args...).Query(func(rows pgx.Rows) error {
		byID := make(map[int64]*CreationResult, len(res))
		var welcome [][2]int64 // e-mail id, account id
		for rows.Next() {
			var kind int32
			var id, account int64
			var num string
			if err := rows.Scan(&kind, &id, &account, &num); err != nil {
				return err
			}
			if kind == 1 {
				welcome = append(welcome, [2]int64{id, account})
			} else if x := byNumber[num]; x != nil {
				x.AccountID = id
				byID[id] = x
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		// Ids ascend with the customers' positions, so sorting keeps the order.
		slices.SortFunc(welcome, func(a, b [2]int64) int { return int(a[0] - b[0]) })
		for _, w := range welcome {
			if x := byID[w[1]]; x != nil {
				x.WelcomeEmailIDs = append(x.WelcomeEmailIDs, w[0])
			}
		}
		return nil
	})
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
