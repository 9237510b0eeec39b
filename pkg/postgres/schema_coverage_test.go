package postgres_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// TestSchemaCoverage closes the class "validation accepts what Postgres
// refuses". It reads a freshly migrated database's bounded columns (every
// numeric column with its precision and scale, every length-limited text
// column) and every CHECK constraint, and requires each to be listed in
// schemaCoverage: either refused by domain validation (each example runs
// through the real validator, which must refuse it with exactly that code
// at that attr) or marked as not reachable from partner input, with the
// reason. A column or CHECK added by a later migration fails this test
// until it is covered.
func TestSchemaCoverage(t *testing.T) {
	t.Parallel()
	g := testutil.NewDatabase(t).DB.Gorm()

	var cols []struct {
		TableName, ColumnName, DataType        string
		NumericPrecision, NumericScale, MaxLen *int
	}
	if err := g.Raw(`
		SELECT c.table_name, c.column_name, c.data_type, c.numeric_precision, c.numeric_scale, c.character_maximum_length AS max_len
		  FROM information_schema.columns c
		  JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
		 WHERE c.table_schema = current_schema()
		   AND (c.numeric_precision IS NOT NULL OR c.character_maximum_length IS NOT NULL OR c.data_type = 'numeric')`).Scan(&cols).Error; err != nil {
		t.Fatal(err)
	}
	var checks []struct{ Owner, Name, Def string }
	if err := g.Raw(`
		SELECT CASE WHEN conrelid <> 0 THEN conrelid::regclass::text ELSE contypid::regtype::text END AS owner,
		       conname AS name, pg_get_constraintdef(oid) AS def
		  FROM pg_constraint WHERE contype = 'c' AND connamespace = current_schema()::regnamespace`).Scan(&checks).Error; err != nil {
		t.Fatal(err)
	}
	if len(cols) < 10 || len(checks) < 10 {
		t.Fatalf("schema query found %d columns and %d checks: is the database migrated?", len(cols), len(checks))
	}

	seen := map[string]string{} // coverage key → what it is, for messages
	for _, c := range cols {
		typ := c.DataType
		switch {
		case c.DataType == "numeric" && c.NumericPrecision != nil:
			typ = fmt.Sprintf("numeric(%d,%d)", *c.NumericPrecision, *c.NumericScale)
		case c.MaxLen != nil:
			typ = fmt.Sprintf("%s(%d)", c.DataType, *c.MaxLen)
		}
		seen[c.TableName+"."+c.ColumnName+" "+typ] = "column"
	}
	for _, c := range checks {
		seen["check "+c.Owner+"."+c.Name] = c.Def
	}

	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		cov, ok := schemaCoverage[key]
		switch {
		case !ok:
			t.Errorf("%q (%s) is not covered: add a validation rule with its own code and an example here, "+
				"or say why partner input cannot reach it", key, seen[key])
		case cov.notFromPartner == "" && len(cov.examples) == 0:
			t.Errorf("%q: neither examples nor a reason", key)
		case cov.notFromPartner != "" && len(cov.examples) > 0:
			t.Errorf("%q: both examples and a reason; which is it?", key)
		}
		for _, ex := range cov.examples {
			errs := ex.refuse()
			if len(errs) != 1 || errs[0].Code != ex.code || errs[0].Attr != ex.attr {
				t.Errorf("%q: validation answered %+v, want exactly %s at %s", key, errs, ex.code, ex.attr)
			}
		}
	}
	for key := range schemaCoverage {
		if _, ok := seen[key]; !ok {
			t.Errorf("%q is covered but not in the schema (renamed or retyped?)", key)
		}
	}

	// The unique keys DataRefused treats as our own writers' conflicts exist.
	var uniques []string
	if err := g.Raw(`SELECT conname FROM pg_constraint WHERE contype IN ('u', 'p') AND connamespace = current_schema()::regnamespace`).
		Scan(&uniques).Error; err != nil {
		t.Fatal(err)
	}
	for _, name := range postgres.InternalConflicts() {
		if !slices.Contains(uniques, name) {
			t.Errorf("internal conflict %q is not a unique key of the schema", name)
		}
	}
}

// coverage says how one bounded column or CHECK is kept from refusing
// partner data.
type coverage struct {
	examples       []example
	notFromPartner string
}

// example is an input the domain validation must refuse with exactly code
// at attr.
type example struct {
	code, attr string
	refuse     func() []dataimport.FieldError
}

func refusedBy(examples ...example) coverage { return coverage{examples: examples} }

func notFromPartner(why string) coverage { return coverage{notFromPartner: why} }

const (
	aKey      = "a key: taken from a sequence or a parent row by our code"
	ourState  = "our process state, written by our code only"
	operators = "operator input through importctl, never a partner request"
	vendors   = "filled from the payment vendor's answer, not from the partner's request"
)

// The schema as partners reach it. Keys: "table.column type" for bounded
// columns, "check table.constraint" for CHECKs.
var schemaCoverage = map[string]coverage{
	// Money: numeric(16,2) holds 14 whole digits and 2 places.
	"accounts.transfer_balance numeric(16,2)": refusedBy(
		account("max_whole_digits", "transfer_balance", func(m map[string]any) { m["transfer_balance"] = "1e15" }),
		account("max_decimal_places", "transfer_balance", func(m map[string]any) { m["transfer_balance"] = "1.005" })),
	"accounts.balance numeric(16,2)": refusedBy( // derived: transfer_balance and every transaction since
		account("balance_out_of_range", "current_statement_transactions.0.amount",
			func(m map[string]any) { m["transfer_balance"] = "99999999999999.99" }),
		account("balance_out_of_range", "current_statement_transactions.1.amount", func(m map[string]any) {
			m["transfer_balance"] = "-99999999999999.00" // +12.50, then the sample's payment of 55.00 takes it under
		}),
		storedBalance("balance_out_of_range", "transactions.0.amount", "99999999999999.99", charge("0.01")),
		storedBalance("balance_out_of_range", "transactions.1.amount", "-99999999999999.00", charge("0.5"), credit("1.51"))),
	"account_transactions.amount numeric(16,2)": refusedBy(
		account("max_whole_digits", "current_statement_transactions.0.amount", func(m map[string]any) { openingTx(m)["amount"] = "1e14" }),
		account("max_decimal_places", "current_statement_transactions.0.amount", func(m map[string]any) { openingTx(m)["amount"] = "12.505" }),
		transactions("max_whole_digits", "transactions.0.amount", charge("100000000000000")),
		transactions("max_decimal_places", "transactions.0.amount", charge("0.015"))),
	"account_transactions.balance_effect numeric(16,2)": refusedBy( // ±amount
		transactions("max_whole_digits", "transactions.0.amount", credit("100000000000000"))),
	"historical_statements.gross_amount numeric(16,2)": refusedBy(
		statements("max_whole_digits", "statements.0.gross_amount", `"gross_amount": -100000000000000`),
		statements("max_decimal_places", "statements.0.gross_amount", `"gross_amount": 10.001`)),

	// CHECKs partner data reaches.
	"check account_transactions.account_transactions_amount_check": refusedBy(
		account("amount_must_be_positive", "current_statement_transactions.0.amount", func(m map[string]any) { openingTx(m)["amount"] = "0" }),
		transactions("amount_must_be_positive", "transactions.0.amount", charge("-1"))),
	"check account_transactions.account_transactions_type_check": refusedBy(
		account("invalid_choice", "current_statement_transactions.1.type", func(m map[string]any) {
			m["current_statement_transactions"].([]any)[1].(map[string]any)["type"] = "REFUND"
		}),
		transactions("invalid_choice", "transactions.0.type", `{"transaction_id":"T-1","transaction_date":"2025-06-10","amount":1,"type":"BONUS"}`)),
	"check accounts.accounts_account_type_check": refusedBy(
		account("invalid_choice", "account_type", func(m map[string]any) { m["account_type"] = "HOUSEHOLD" })),
	"check import_processes.import_processes_external_account_number_check": refusedBy(
		account("max_length", "external_account_number", func(m map[string]any) { m["external_account_number"] = strings.Repeat("é", 129) }),
		account("blank", "external_account_number", func(m map[string]any) { m["external_account_number"] = "  " })),
	"check meter_points.meter_points_check": refusedBy(
		account("start_date_later_than_end_date", "supply_addresses.0.meter_points.0.supply_end_date", func(m map[string]any) {
			m["supply_addresses"].([]any)[0].(map[string]any)["meter_points"].([]any)[0].(map[string]any)["supply_end_date"] = "2024-01-31"
		})),
	"check statements.statements_check": refusedBy( // the first open statement, from the two dates and the creation day
		account("start_date_later_than_end_date", "next_bill_due_date", func(m map[string]any) { m["next_bill_due_date"] = "2025-05-31" }),
		account("start_date_later_than_end_date", "next_bill_due_date", func(m map[string]any) {
			delete(m, "last_statement_closing_date")
			m["next_bill_due_date"] = "2025-06-14" // the day before the creation day
		})),
	"check historical_statements.historical_statements_check": refusedBy(
		statements("start_date_later_than_end_date", "statements.0.bill_period_to_date", `"bill_period_from_date": "2025-03-01"`)),
	"check payment_instructions.payment_instructions_vendor_check": refusedBy(
		payment("blank", "vendor", `"vendor": "  "`)),
	"check payment_instructions.payment_instructions_reference_check": refusedBy(
		payment("blank", "reference", `"reference": " "`)),
	"check payment_instructions.payment_instructions_type_check": refusedBy(
		payment("invalid_choice", "type", `"type": "CHEQUE"`)),

	"check import_processes.import_processes_window_check": refusedBy(example{ // a v2 create's task_params
		code: dataimport.CodeWindowEndBeforeStart, attr: "task_params.schedule_window_end", refuse: func() []dataimport.FieldError {
			now := time.Now()
			return dataimport.CheckWindow(dataimport.Window{Start: now.Add(time.Hour), End: now.Add(time.Hour)}, now)
		}}),
	// CHECKs only our code, operators or vendors reach.
	"check import_processes.import_processes_v2_status_check":              notFromPartner(ourState),
	"check import_processes.import_processes_v1_v2_status_check":           notFromPartner(ourState + " (v1 status derived from the v2 state)"),
	"check import_process_events.import_process_events_event_check":        notFromPartner(ourState + " (the timeline)"),
	"check import_process_events.import_process_events_subject_check":      notFromPartner("an event names a process or a supplier: set by our writers (a job's trigger, the brake), never by partner input"),
	"check idempotency_keys.idempotency_keys_key_check":                    notFromPartner("the Idempotency-Key header: the middleware refuses a malformed one (invalid_idempotency_key, 1-255 printable ASCII) before it reaches the table"),
	"check idempotency_keys.idempotency_keys_state_check":                  notFromPartner(ourState),
	"check idempotency_keys.idempotency_keys_body_sha256_check":            notFromPartner("a SHA-256 our code computes"),
	"check idempotency_keys.idempotency_keys_check":                        notFromPartner(ourState + " (a complete key has its response)"),
	"check welcome_emails.welcome_emails_state_check":                      notFromPartner(ourState),
	"check welcome_emails.welcome_emails_sent_at_state":                    notFromPartner(ourState),
	"check accounts.accounts_platform_account_number_check":                notFromPartner("drawn by our code (A- and 8 hex digits)"),
	"check api_keys.api_keys_key_hash_check":                               notFromPartner("a SHA-256 our code computes"),
	"check import_attempts.import_attempts_outcome_check":                  notFromPartner(ourState),
	"check import_process_versions.import_process_versions_version_check":  notFromPartner(ourState),
	"check import_processes.import_processes_check":                        notFromPartner(ourState),
	"check import_processes.import_processes_status_check":                 notFromPartner(ourState),
	"check statements.statements_status_check":                             notFromPartner(ourState),
	"check payment_instructions.payment_instructions_status_check":         notFromPartner(ourState),
	"check import_suppliers.import_suppliers_code_check":                   notFromPartner(operators),
	"check import_suppliers.import_suppliers_phone_region_check":           notFromPartner(operators),
	"check import_suppliers.import_suppliers_status_check":                 notFromPartner(operators),
	"check operations_teams.operations_teams_name_check":                   notFromPartner(operators),
	"check organisations.organisations_name_check":                         notFromPartner(operators),
	"check payment_instructions.payment_instructions_card_exp_month_check": notFromPartner(vendors),
	"check payment_instructions.payment_instructions_check":                notFromPartner(vendors + " (a card's last four)"),
	"check payment_instructions.payment_instructions_check1":               notFromPartner(vendors + " (a mandate's status)"),

	// Integer columns.
	"account_customers.position integer":            notFromPartner("the customer's index in the payload; the body limit keeps it far below 2^31"),
	"supply_addresses.position integer":             notFromPartner("the supply address's index in the payload; the body limit keeps it far below 2^31"),
	"import_processes.staged_version integer":       notFromPartner("counts stagings; our code increments it"),
	"import_process_versions.version integer":       notFromPartner("counts stagings; our code increments it"),
	"import_processes.attempt integer":              notFromPartner("counts attempts; our code increments it"),
	"import_attempts.attempt integer":               notFromPartner("counts attempts; our code increments it"),
	"welcome_emails.attempts integer":               notFromPartner("counts sends; our code increments it"),
	"payment_instructions.card_exp_month integer":   notFromPartner(vendors),
	"payment_instructions.card_exp_year integer":    notFromPartner(vendors),
	"goose_db_version.id integer":                   notFromPartner("goose's migration bookkeeping"),
	"goose_db_version.version_id bigint":            notFromPartner("goose's migration bookkeeping"),
	"account_customers.account_id bigint":           notFromPartner(aKey),
	"account_customers.id bigint":                   notFromPartner(aKey),
	"account_notes.account_id bigint":               notFromPartner(aKey),
	"account_notes.id bigint":                       notFromPartner(aKey),
	"account_transactions.account_id bigint":        notFromPartner(aKey),
	"account_transactions.id bigint":                notFromPartner(aKey),
	"account_transactions.statement_id bigint":      notFromPartner(aKey),
	"accounts.id bigint":                            notFromPartner(aKey),
	"import_process_events.id bigint":               notFromPartner(aKey),
	"idempotency_keys.organisation_id bigint":       notFromPartner(aKey),
	"idempotency_keys.response_status integer":      notFromPartner("an HTTP status our code answered"),
	"import_process_events.process_id bigint":       notFromPartner(aKey),
	"import_process_events.supplier_id bigint":      notFromPartner(aKey),
	"import_process_events.organisation_id bigint":  notFromPartner(aKey),
	"import_process_events.position bigint":         notFromPartner("numbered by the event relay from a sequence"),
	"accounts.import_process_id bigint":             notFromPartner(aKey),
	"accounts.supplier_id bigint":                   notFromPartner(aKey),
	"agreements.id bigint":                          notFromPartner(aKey),
	"agreements.meter_point_id bigint":              notFromPartner(aKey),
	"api_keys.id bigint":                            notFromPartner(aKey),
	"api_keys.organisation_id bigint":               notFromPartner(aKey),
	"historical_statements.account_id bigint":       notFromPartner(aKey),
	"historical_statements.id bigint":               notFromPartner(aKey),
	"import_attempts.process_id bigint":             notFromPartner(aKey),
	"import_process_versions.process_id bigint":     notFromPartner(aKey),
	"import_processes.id bigint":                    notFromPartner(aKey),
	"import_processes.operations_team_id bigint":    notFromPartner(aKey),
	"import_processes.supplier_id bigint":           notFromPartner(aKey),
	"import_suppliers.id bigint":                    notFromPartner(aKey),
	"meter_points.account_id bigint":                notFromPartner(aKey),
	"meter_points.id bigint":                        notFromPartner(aKey),
	"meter_points.supply_address_id bigint":         notFromPartner(aKey),
	"operations_teams.id bigint":                    notFromPartner(aKey),
	"organisation_suppliers.organisation_id bigint": notFromPartner(aKey),
	"organisation_suppliers.supplier_id bigint":     notFromPartner(aKey),
	"organisations.id bigint":                       notFromPartner(aKey),
	"payment_instructions.account_id bigint":        notFromPartner(aKey),
	"payment_instructions.id bigint":                notFromPartner(aKey),
	"statements.account_id bigint":                  notFromPartner(aKey),
	"statements.id bigint":                          notFromPartner(aKey),
	"supply_addresses.account_id bigint":            notFromPartner(aKey),
	"supply_addresses.id bigint":                    notFromPartner(aKey),
	"welcome_emails.account_id bigint":              notFromPartner(aKey),
	"welcome_emails.customer_id bigint":             notFromPartner(aKey),
	"welcome_emails.id bigint":                      notFromPartner(aKey),

	// Operator console and audit log (migration 00013): written by operators
	// through importctl and the console, never from a partner's request.
	"check operators.operators_name_check":                       notFromPartner(operators + " (postgres.ValidOperatorName refuses a bad name first)"),
	"check operators.operators_password_hash_check":              notFromPartner("a bcrypt hash our code computes"),
	"check operator_sessions.operator_sessions_token_hash_check": notFromPartner("a SHA-256 our code computes"),
	"check audit_log.audit_log_action_check":                     notFromPartner("one of the postgres.Audit* action constants"),
	"check audit_log.audit_log_actor_check":                      notFromPartner("importctl:<user> or operator:<name>; postgres.(*DB).Audit truncates it to 200 characters"),
	"audit_log.id bigint":                                        notFromPartner(aKey),
	"operator_sessions.operator_id bigint":                       notFromPartner(aKey),
	"operators.id bigint":                                        notFromPartner(aKey),
	// Webhooks (migration 00011): endpoints are registered by operators
	// (importctl webhook), the rest is written by the delivery workers.
	"check webhook_endpoints.webhook_endpoints_url_check":             notFromPartner(operators + " (webhook.Guard.CheckURL refuses a URL over 2048 characters first)"),
	"check webhook_endpoints.webhook_endpoints_secret_check":          notFromPartner("drawn by our code (webhook.NewSecret)"),
	"check webhook_endpoints.webhook_endpoints_disabled_reason_check": notFromPartner("written by our code (a 410, or an operator's disable)"),
	"check webhook_endpoints.webhook_endpoints_check":                 notFromPartner(ourState + " (disabled endpoints say why)"),
	"check webhook_endpoints.webhook_endpoints_cursor_position_check": notFromPartner("an event position the dispatcher read"),
	// Partner self-serve webhooks (migration 00020).
	"check webhook_endpoints.webhook_endpoints_description_check": refusedBy(example{dataimport.CodeMaxLength, "description",
		func() []dataimport.FieldError { return dataimport.CheckWebhookDescription(strings.Repeat("d", 501)) }}),
	"check webhook_endpoints.webhook_endpoints_previous_secret_check": notFromPartner("drawn by our code (webhook.NewSecret), kept at a rotation"),
	"check webhook_endpoints.webhook_endpoints_check1":                notFromPartner(ourState + " (a rotation sets both, its overlap end with the old secret)"),
	// Job errors stored once per job (migration 00019).
	"import_job_errors.hash bigint":                                     notFromPartner("a hash our code computes (postgres.ErrorHash)"),
	"import_job_errors.job_id bigint":                                   notFromPartner(aKey),
	"import_job_errors.n bigint":                                        notFromPartner("a count of lines our code keeps"),
	"import_job_records.error_hash bigint":                              notFromPartner("a hash our code computes (postgres.ErrorHash)"),
	"check webhook_deliveries.webhook_deliveries_attempts_check":        notFromPartner("counts attempts; our code increments it"),
	"check webhook_deliveries.webhook_deliveries_state_check":           notFromPartner(ourState),
	"check webhook_deliveries.webhook_deliveries_last_status_check":     notFromPartner("an HTTP status a receiver answered (net/http refuses others)"),
	"check webhook_deliveries.webhook_deliveries_last_latency_ms_check": notFromPartner("a duration our code measured"),
	"check webhook_attempts.webhook_attempts_attempt_check":             notFromPartner("counts attempts; our code increments it"),
	"check webhook_attempts.webhook_attempts_status_check":              notFromPartner("an HTTP status a receiver answered (net/http refuses others)"),
	"check webhook_attempts.webhook_attempts_latency_ms_check":          notFromPartner("a duration our code measured"),
	"webhook_attempts.attempt integer":                                  notFromPartner("counts attempts; at most webhook.Schedule.MaxAttempts"),
	"webhook_attempts.latency_ms integer":                               notFromPartner("a duration our code measured, bounded by WEBHOOK_TIMEOUT"),
	"webhook_attempts.status integer":                                   notFromPartner("an HTTP status a receiver answered"),
	"webhook_attempts.delivery_id bigint":                               notFromPartner(aKey),
	"webhook_attempts.id bigint":                                        notFromPartner(aKey),
	"webhook_deliveries.attempts integer":                               notFromPartner("counts attempts; at most webhook.Schedule.MaxAttempts"),
	"webhook_deliveries.last_latency_ms integer":                        notFromPartner("a duration our code measured, bounded by WEBHOOK_TIMEOUT"),
	"webhook_deliveries.last_status integer":                            notFromPartner("an HTTP status a receiver answered"),
	"webhook_deliveries.endpoint_id bigint":                             notFromPartner(aKey),
	"webhook_deliveries.event_id bigint":                                notFromPartner(aKey),
	"webhook_deliveries.id bigint":                                      notFromPartner(aKey),
	"webhook_endpoints.cursor_position bigint":                          notFromPartner("an event position the dispatcher read"),
	"webhook_endpoints.id bigint":                                       notFromPartner(aKey),
	"webhook_endpoints.organisation_id bigint":                          notFromPartner(aKey),
}

// Example builders: each runs the validator the real request runs.

// coverageRules are the worker's rules on the day of creationNow.
var coverageRules = dataimport.AccountRules{PhoneRegion: "GB", Today: dataimport.DateOf(creationNow), PaymentVendors: []string{"STRIPE"}}

func fieldErrors(err error) []dataimport.FieldError {
	if err == nil {
		return nil
	}
	if e, ok := dataimport.AsError(err); ok && len(e.Errors) > 0 {
		return e.Errors
	}
	return []dataimport.FieldError{{Code: "not a validation error", Detail: err.Error()}}
}

// account edits the sample account (validate, stage and the worker).
func account(code, attr string, edit func(map[string]any)) example {
	return example{code, attr, func() []dataimport.FieldError {
		body, err := samplePayload("DEMO_ENERGY", "EXT-COVER", edit)
		if err != nil {
			return fieldErrors(err)
		}
		_, err = dataimport.DecodeAccount(body, coverageRules)
		return fieldErrors(err)
	}}
}

// openingTx is the sample account's first opening transaction (a CHARGE).
func openingTx(m map[string]any) map[string]any {
	return m["current_statement_transactions"].([]any)[0].(map[string]any)
}

func charge(amount string) string {
	return `{"transaction_id":"T-` + amount + `","transaction_date":"2025-06-10","amount":` + amount + `,"type":"CHARGE","reason":"IMPORTED_CHARGE"}`
}

func credit(amount string) string {
	return `{"transaction_id":"C-` + amount + `","transaction_date":"2025-06-10","amount":` + amount + `,"type":"CREDIT","reason":"GENERAL_CREDIT"}`
}

func decodeTransactions(txs []string) (*dataimport.TransactionsRequest, error) {
	body := `{"import_supplier":"DEMO_ENERGY","external_account_number":"EXT-COVER","transactions":[` + strings.Join(txs, ",") + `]}`
	return dataimport.Decode([]byte(body), dataimport.CodeInvalidPayload, "invalid", (*dataimport.TransactionsRequest).Validate)
}

// transactions is the transactions endpoint's body validation.
func transactions(code, attr string, txs ...string) example {
	return example{code, attr, func() []dataimport.FieldError {
		_, err := decodeTransactions(txs)
		return fieldErrors(err)
	}}
}

// storedBalance is the transactions endpoint's balance check: valid
// transactions on an account whose stored balance is opening.
func storedBalance(code, attr, opening string, txs ...string) example {
	return example{code, attr, func() []dataimport.FieldError {
		req, err := decodeTransactions(txs)
		if err != nil {
			return fieldErrors(err)
		}
		if o, over := dataimport.RunningBalanceOverflow(decimal.RequireFromString(opening), req.Transactions); over {
			return []dataimport.FieldError{o.FieldError("transactions")}
		}
		return nil
	}}
}

// statements is the historical-statements body with one field of a valid
// statement replaced (or added).
func statements(code, attr, field string) example {
	return example{code, attr, func() []dataimport.FieldError {
		st := map[string]string{}
		for _, f := range []string{`"statement_id": "S-1"`, `"bill_period_from_date": "2025-01-01"`, `"bill_period_to_date": "2025-01-31"`,
			`"gross_amount": 10.50`, field} {
			name, _, _ := strings.Cut(f, ":")
			st[name] = f
		}
		fields := make([]string, 0, len(st))
		for _, f := range st {
			fields = append(fields, f)
		}
		body := `{"import_supplier":"DEMO_ENERGY","external_account_number":"EXT-COVER","statements":[{` + strings.Join(fields, ",") + `}]}`
		_, err := dataimport.Decode([]byte(body), dataimport.CodeInvalidPayload, "invalid",
			func(r *dataimport.StatementsRequest) []dataimport.FieldError { return r.Validate(coverageRules.Today) })
		return fieldErrors(err)
	}}
}

// payment is the payment-instruction body with one field replaced.
func payment(code, attr, field string) example {
	return example{code, attr, func() []dataimport.FieldError {
		pi := map[string]string{}
		for _, f := range []string{`"import_supplier": "DEMO_ENERGY"`, `"external_account_number": "EXT-COVER"`, `"vendor": "STRIPE"`,
			`"reference": "pm_123"`, `"type": "CARD"`, field} {
			name, _, _ := strings.Cut(f, ":")
			pi[name] = f
		}
		fields := make([]string, 0, len(pi))
		for _, f := range pi {
			fields = append(fields, f)
		}
		_, err := dataimport.Decode([]byte(`{`+strings.Join(fields, ",")+`}`), dataimport.CodeInvalidPayload, "invalid",
			dataimport.PaymentInstructionValidator([]string{"STRIPE"}))
		return fieldErrors(err)
	}}
}
