package postgres_test

import (
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// Where the text of a column comes from.
const (
	internal = "internal" // written by the service: constants, enums, generated or derived values
	partner  = "partner"  // partner or operator input, refused at the edge when not clean (pkg/httpapi inputs, pkg/dataimport validation, console forms)
	external = "external" // text from outside no validator sees (webhook receivers, vendors, SMTP servers): cleaned by pkg/storable
)

// textOrigins classifies every text, varchar and jsonb column of the
// migrated schema. A new column fails TestStorableTextColumns until it is
// listed; an external one also needs a hostile writer below.
var textOrigins = map[string]string{
	"account_customers.customer_preferences": partner, "account_customers.email": partner,
	"account_customers.family_name": partner, "account_customers.given_name": partner,
	"account_customers.landline": partner, "account_customers.mobile": partner,
	"account_customers.salutation": partner, "account_customers.title": partner,
	"account_notes.body": partner, "account_notes.document_paths": partner,
	"account_payment_schedules.frequency": partner, "account_payment_schedules.means": partner,
	"account_transactions.data": partner, "account_transactions.description": partner,
	"account_transactions.transaction_id": partner, "account_transactions.type": partner,
	"accounts.account_type": partner, "accounts.details": partner,
	"accounts.external_account_number": partner, "accounts.platform_account_number": internal,
	"agreements.product_code": partner, "agreements.tariff_code": partner,
	"api_keys.prefix":  internal,
	"audit_log.action": internal, "audit_log.actor": internal, "audit_log.after": partner,
	"audit_log.before": partner, "audit_log.target": partner,
	"customer_psr.code":            partner,
	"historical_statements.number": partner, "historical_statements.statement_id": partner,
	"historical_statements.statement_path": partner,
	"idempotency_keys.key":                 partner, "idempotency_keys.method": internal, "idempotency_keys.path": partner,
	"idempotency_keys.response_headers": internal, "idempotency_keys.state": internal,
	"import_attempts.error": external, "import_attempts.outcome": internal,
	"import_attempts.platform_account_number": internal,
	"import_failures.error":                   external, "import_failures.external_account_number": external, "import_failures.source": internal,
	"import_job_errors.error": external, "import_job_records.errors": external, "import_job_records.external_account_number": partner,
	"import_job_records.outcome": internal, "import_job_records.payload": external, // an invalid line keeps its text
	"import_job_records.platform_account_number": internal,
	"import_jobs.error":                          external, "import_jobs.idempotency_key": partner, "import_jobs.lease_owner": internal,
	"import_jobs.rate_samples": internal, "import_jobs.request_query": partner, "import_jobs.state": internal,
	"import_process_events.data": external, "import_process_events.event": internal,
	"import_process_versions.payload":          partner,
	"import_processes.external_account_number": partner, "import_processes.latest_error": external,
	"import_processes.platform_account_number": internal, "import_processes.status": internal, "import_processes.v2_status": internal,
	"import_suppliers.code": partner, "import_suppliers.document_root": partner, "import_suppliers.market": partner,
	"import_suppliers.phone_region": partner, "import_suppliers.status": internal,
	"import_suppliers.pause_reason": internal, // the actor's name, our wording, measured figures and our error codes
	"meter_points.fuel":             partner, "meter_points.mpxn": partner, "meter_points.ssc": partner,
	"meter_registers.rate_type": partner, "meter_registers.register_id": partner,
	"meters.serial_number":  partner,
	"operations_teams.name": partner,
	"operators.name":        partner, "operators.password_hash": internal,
	"organisations.name":              partner,
	"payment_instructions.card_brand": external, "payment_instructions.card_last4": external, "payment_instructions.mandate_status": external,
	"payment_instructions.reference": partner, "payment_instructions.status": internal,
	"payment_instructions.type": partner, "payment_instructions.vendor": partner,
	"products.code": partner, "products.display_name": partner, "products.full_name": partner,
	"settings.key": internal, "settings.value": partner,
	"statements.status":                internal,
	"supply_addresses.supply_postcode": partner, "supply_addresses.supply_address1": partner, "supply_addresses.supply_address2": partner,
	"supply_addresses.supply_address3": partner, "supply_addresses.supply_address4": partner, "supply_addresses.supply_address5": partner,
	"tariffs.fuel": partner, "tariffs.payment_method": partner, "tariffs.region": partner, "tariffs.tariff_code": partner,
	"transfer_readings.reading_type": partner, "transfer_readings.register_id": partner,
	"unit_rates.rate_type":          partner,
	"webhook_endpoints.description": partner, "webhook_endpoints.previous_secret": internal,
	"webhook_attempts.error": external, "webhook_attempts.response_excerpt": external,
	"webhook_deliveries.last_error": external, "webhook_deliveries.state": internal,
	"webhook_endpoints.disabled_reason": partner, "webhook_endpoints.secret": internal, "webhook_endpoints.url": partner,
	"welcome_emails.email": partner, "welcome_emails.last_error": external,
	"welcome_emails.message_id": internal, "welcome_emails.state": internal,
}

// hostile is what outside text can hold that Postgres refuses or that must
// not be kept whole: NUL, invalid UTF-8, a byte-order mark with UTF-16
// NULs, and 1 MB.
var hostile = "ok\x00 \xff\xfe o\x00k\x00 \xc3\x28 " + strings.Repeat("\u20ac", 350_000)

// TestStorableTextColumns closes the class "text from outside stored without
// cleaning": it walks every text, varchar and jsonb column of the migrated
// schema, requires each to be classified, and writes hostile text through
// every writer of an external column, each of which must store it (cleaned
// and bounded) rather than fail.
func TestStorableTextColumns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var cols []string
	e.must(e.g.Raw(`SELECT c.table_name || '.' || c.column_name FROM information_schema.columns c
		  JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
		 WHERE c.table_schema = current_schema() AND c.data_type IN ('text', 'character varying', 'character', 'jsonb', 'json')
		 ORDER BY 1`).Scan(&cols).Error)
	if len(cols) < 50 {
		t.Fatalf("found %d text columns: is the database migrated?", len(cols))
	}
	for _, c := range cols {
		if _, ok := textOrigins[c]; !ok {
			t.Errorf("%s is not classified in textOrigins: internal, partner (refused at the edge) or external (cleaned by pkg/storable, with a hostile writer here)", c)
		}
	}
	for c := range textOrigins {
		if !slices.Contains(cols, c) {
			t.Errorf("textOrigins lists %s, which the schema does not have", c)
		}
	}

	// Every writer of an external column, each given hostile text; covered
	// collects the columns they proved.
	covered := map[string]bool{}
	proved := func(cols ...string) {
		for _, c := range cols {
			var bad int
			table, col, _ := strings.Cut(c, ".")
			e.must(e.g.Raw(`SELECT count(*) FROM ` + table + ` WHERE ` + col + `::text LIKE '%\\u0000%' OR length(` + col + `::text) > 100000`).Scan(&bad).Error)
			var n int
			e.must(e.g.Raw(`SELECT count(*) FROM ` + table + ` WHERE ` + col + ` IS NOT NULL`).Scan(&n).Error)
			if bad != 0 || n == 0 {
				t.Errorf("%s: %d rows written, %d not clean or unbounded", c, n, bad)
			}
			covered[c] = true
		}
	}
	s := e.supplier("STORABLE", true)

	// A creation with vendor-given payment details and an account welcome e-mail.
	in := verified(e.prepare(s, "EXT-STORABLE", false, withPayments))
	for i := range in.Instructions {
		in.Instructions[i].Details.MandateStatus = hostile
	}
	res := e.create(in)
	_ = res
	proved("payment_instructions.mandate_status")

	// The payment vendor's details of an instruction added after import.
	var accountID int64
	e.scalar(&accountID, `SELECT id FROM accounts WHERE external_account_number = 'EXT-STORABLE'`)
	e.must(e.g.Exec(`UPDATE payment_instructions SET status = 'INACTIVE' WHERE account_id = ?`, accountID).Error)
	_, _, err := e.db.AddPaymentInstruction(e.ctx, dataimport.PaymentInstruction{AccountID: accountID, Vendor: "STRIPE",
		Reference: "pm_hostile", Type: dataimport.PaymentInstructionType("CARD"),
		Details: dataimport.PaymentDetails{CardBrand: hostile, CardLast4: hostile, CardExpMonth: 12, CardExpYear: 2030}})
	e.must(err)
	proved("payment_instructions.card_brand", "payment_instructions.card_last4")

	// An SMTP server's error.
	var welcomeID int64
	e.scalar(&welcomeID, `SELECT min(id) FROM welcome_emails`)
	e.must(e.g.Exec(`UPDATE welcome_emails SET state = 'sending', attempts = 1 WHERE id = ?`, welcomeID).Error)
	if ok, err := e.db.FinishWelcomeEmail(e.ctx, welcomeID, 1, postgres.WelcomePending, hostile); err != nil || !ok {
		t.Fatalf("finish welcome e-mail: %v %v", ok, err)
	}
	proved("welcome_emails.last_error")

	// An attempt's error quoting a vendor (latest_error, the attempt, its event).
	p2 := e.prepare(s, "EXT-STORABLE-2", false, nil)
	e.must(e.db.FinishAttempt(e.ctx, p2.ProcessID, p2.Attempt, "FAILED", &dataimport.Error{Code: "vendor_error", Detail: hostile,
		Domain: "vendor", Errors: []dataimport.FieldError{{Detail: hostile, Code: "x", Attr: hostile}}}))
	proved("import_processes.latest_error", "import_attempts.error", "import_process_events.data")

	// A stage refusal names the account as the partner sent it: the number
	// may be what validation refused.
	e.must(e.db.RecordStageRefusal(e.ctx, 0, s.ID, hostile, &dataimport.Error{Code: "account_failed_validation", Detail: hostile,
		Errors: []dataimport.FieldError{{Detail: hostile, Code: "x", Attr: hostile}}}))
	proved("import_failures.error", "import_failures.external_account_number")

	// A receiver's answer to a webhook.
	var org, eventID int64
	e.scalar(&org, `INSERT INTO organisations (name) VALUES ('Storable') RETURNING id`)
	e.scalar(&eventID, `SELECT max(id) FROM import_process_events`)
	var endpoint, delivery int64
	e.scalar(&endpoint, `INSERT INTO webhook_endpoints (organisation_id, url, secret) VALUES (?, 'http://127.0.0.1/', 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA') RETURNING id`, org)
	e.scalar(&delivery, `INSERT INTO webhook_deliveries (endpoint_id, event_id, attempts) VALUES (?, ?, 1) RETURNING id`, endpoint, eventID)
	if _, err := e.db.RecordWebhookAttempt(e.ctx, &postgres.WebhookClaim{DeliveryID: delivery, EndpointID: endpoint, Attempt: 1},
		postgres.WebhookResult{Status: 500, Latency: time.Millisecond, Error: hostile, Excerpt: hostile, RetryIn: time.Minute}); err != nil {
		t.Fatal(err)
	}
	proved("webhook_attempts.error", "webhook_attempts.response_excerpt", "webhook_deliveries.last_error")
	var excerpt string
	e.scalar(&excerpt, `SELECT response_excerpt FROM webhook_attempts WHERE delivery_id = ?`, delivery)
	if !utf8.ValidString(excerpt) || !strings.HasPrefix(excerpt, "ok \uFFFD o") {
		t.Errorf("excerpt stored as %q", excerpt[:min(len(excerpt), 40)])
	}

	// A job's line errors and a job's error quote what the upload held.
	job := e.receivingJob(s, "Storable jobs")
	if _, err := e.db.ReceiveJob(e.ctx, job.ID, 0, func() int64 { return 1 }, func() []byte { return make([]byte, 32) },
		func(emit func(postgres.JobLine) error) error {
			if err := emit(postgres.JobLine{Line: 1, External: "R-1", Payload: []byte(hostile),
				Err: &dataimport.Error{Code: "invalid", Detail: hostile, Errors: []dataimport.FieldError{{Detail: hostile, Code: "x", Attr: hostile}}}}); err != nil {
				return err
			}
			return emit(postgres.JobLine{Line: 2, External: "R-2", Payload: []byte(`{}`)})
		}); err != nil {
		t.Fatal(err)
	}
	// Invalid lines' errors are stored once per job (import_job_errors); a
	// line's own error (a window that expired, a failed creation) on the line.
	proved("import_job_errors.error", "import_job_records.payload")
	e.must(e.g.Exec(`UPDATE import_job_records SET outcome = 'staged' WHERE job_id = ? AND line = 2`, job.ID).Error)
	e.must(e.db.ExpireJobLines(e.ctx, job.ID, &dataimport.Error{Code: "schedule_window_expired", Detail: hostile}))
	proved("import_job_records.errors")
	// A re-run of that failed line keeps its error as the line's history.
	rerunID := "00000000-0000-0000-0000-000000000001"
	e.must(e.db.ReceiveJobCorrections(e.ctx, job.ID, rerunID, func(emit func(postgres.JobCorrection) error) error {
		return emit(postgres.JobCorrection{Line: 1, External: "R-2", Payload: []byte(`{}`)})
	}))
	if r, err := e.db.ApplyJobCorrections(e.ctx, job.OrganisationID, job.ID, rerunID, 10); err != nil || r.Counts[dataimport.RerunAccepted] != 1 {
		t.Fatalf("re-run a failed line: %+v %v", r.Counts, err)
	}
	proved("import_job_records.history")
	failed := e.receivingJob(s, "Storable failed job")
	e.must(e.db.FailJob(e.ctx, failed.ID, 0, &dataimport.Error{Code: "unreadable", Detail: hostile}))
	proved("import_jobs.error")

	for c, origin := range textOrigins {
		if origin == external && !covered[c] {
			t.Errorf("%s is external but no hostile writer here proves it is cleaned", c)
		}
	}
}
