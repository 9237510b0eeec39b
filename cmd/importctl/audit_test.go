package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/gridshift/dataimport/pkg/postgres"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// readOnlyCommands change no operator-visible state, so they write no audit
// row. (migrate changes the schema, which the schema's own version table
// records.) Every other leaf command must be in auditedCommands below.
var readOnlyCommands = []string{
	"audit", "migrate", "supplier list", "limit show", "email unknown", "webhook list", "webhook log", "failures",
	"job list", "job show",
}

// TestEveryStateChangingCommandIsAudited walks importctl's whole command
// tree: every leaf command is either read-only (listed above) or run here,
// and each run must leave exactly one new audit row naming the --actor it
// was given, the action and the target. A command added later that is in
// neither list fails this test, and so does one whose change is not audited.
func TestEveryStateChangingCommandIsAudited(t *testing.T) {
	d := testutil.NewDatabase(t)
	t.Setenv("DATABASE_URL", d.URL)
	t.Setenv("WEBHOOK_ALLOW_PRIVATE", "true") // webhook add checks the URL's address
	ctx := t.Context()
	// An imported account with an unknown welcome e-mail: for statement open and email resend.
	mail := testutil.WelcomeEmailRow(t, d.DB, 1, "ada@example.com")
	if err := d.DB.Gorm().Exec(`INSERT INTO statements (account_id, period_from, period_to)
		SELECT id, '2025-06-01', '2025-06-30' FROM accounts`).Error; err != nil {
		t.Fatal(err)
	}
	w, claimed, err := d.DB.ClaimWelcomeEmail(ctx, mail)
	if err != nil || !claimed {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	if ok, err := d.DB.FinishWelcomeEmail(ctx, mail, w.Attempts, postgres.WelcomeUnknown, "no reply"); err != nil || !ok {
		t.Fatalf("finish: %v %v", ok, err)
	}

	type run struct {
		args   []string
		action string
		target string
		after  string // a fragment the after column must contain
	}
	prefix := "" // filled by apikey create, used by apikey revoke
	productsFile := filepath.Join("..", "..", "deploy", "local", "demo_products.json")
	runs := []run{
		{[]string{"supplier", "create", "ACME"}, postgres.AuditSupplierCreate, "supplier:ACME", `"status": "Ongoing"`},
		{[]string{"supplier", "set-status", "ACME", "Paused"}, postgres.AuditSupplierStatus, "supplier:ACME", `"status": "Paused"`},
		{[]string{"team", "create", "Migrations"}, postgres.AuditTeamCreate, "team:Migrations", `"name": "Migrations"`},
		{[]string{"org", "create", "Partner"}, postgres.AuditOrgCreate, "org:Partner", `"name": "Partner"`},
		{[]string{"apikey", "create", "--org", "Partner", "--supplier", "ACME"}, postgres.AuditAPIKeyCreate, "apikey:", `"newly_granted_suppliers": ["ACME"]`},
		{[]string{"apikey", "revoke", "PREFIX"}, postgres.AuditAPIKeyRevoke, "apikey:", `"revoked_at"`},
		{[]string{"limit", "set", "7"}, postgres.AuditLimitSet, "concurrency_limit", `"limit": 7`},
		{[]string{"limit", "off"}, postgres.AuditLimitSet, "concurrency_limit", `"enabled": false`},
		{[]string{"limit", "set", "--supplier", "ACME", "3"}, postgres.AuditLimitSet, "supplier:ACME", `"limit": 3`},
		{[]string{"limit", "set", "--org", "Partner", "5"}, postgres.AuditLimitSet, "org:Partner", `"limit": 5`},
		{[]string{"limit", "off", "--supplier", "ACME"}, postgres.AuditLimitSet, "supplier:ACME", `"enabled": false`},
		{[]string{"account", "skip", "ACME", "EXT-9"}, postgres.AuditAccountSkip, "account:ACME/EXT-9", `"skipped": true`},
		{[]string{"statement", "open", "WELCOME_1", "EXT-1", "--from", "2025-07-01", "--to", "2025-07-31"}, postgres.AuditStatementOpen, "account:WELCOME_1/EXT-1", `"2025-07-01"`},
		{[]string{"email", "resend", fmt.Sprint(mail)}, postgres.AuditEmailResend, fmt.Sprintf("welcome_email:%d", mail), `"state": "pending"`},
		{[]string{"operator", "create", "alice"}, postgres.AuditOperatorCreate, "operator:alice", `"must_change_password": true`},
		{[]string{"operator", "reset-password", "alice"}, postgres.AuditOperatorPassword, "operator:alice", `"must_change_password": true`},
		{[]string{"webhook", "add", "--org", "Partner", "--url", "http://127.0.0.1:9/hooks"}, postgres.AuditWebhookCreate, "webhook:1", `"url": "http://127.0.0.1:9/hooks"`},
		{[]string{"webhook", "disable", "1"}, postgres.AuditWebhookDisable, "webhook:1", `"enabled": false`},
		{[]string{"webhook", "enable", "1"}, postgres.AuditWebhookEnable, "webhook:1", `"enabled": true`},
		{[]string{"webhook", "rotate-secret", "1"}, postgres.AuditWebhookRotate, "webhook:1", `"secret_rotated": true`},
		{[]string{"webhook", "replay", "1", "--since", "2026-01-01T00:00:00Z"}, postgres.AuditWebhookReplay, "webhook:1", `"since": "2026-01-01T00:00:00Z"`},
		{[]string{"supplier", "update", "ACME", "--market", "GB"}, postgres.AuditSupplierUpdate, "supplier:ACME", `"market": "GB"`},
		{[]string{"supplier", "brake", "ACME", "--failure-rate", "5%", "--window", "500"}, postgres.AuditSupplierBrake, "supplier:ACME", `"failure_rate": "5%"`},
		{[]string{"products", "load", productsFile}, postgres.AuditProductsUpsert, "products", `"created": ["`},
		{[]string{"account", "unskip", "ACME", "EXT-9"}, postgres.AuditAccountUnskip, "account:ACME/EXT-9", `"skipped": false`},
		{[]string{"account", "retry", "ACME", "EXT-R"}, postgres.AuditAccountRetry, "account:ACME/EXT-R", `"retried": 1`},
		{[]string{"job", "cancel", "1"}, postgres.AuditJobCancel, "job:1", `"state": "CANCELLED"`},
		{[]string{"job", "retry", "2", "--code", "product_not_found"}, postgres.AuditJobRetry, "job:2", `"retried": 0`},
	}
	// What the account and job commands act on, made once ACME and Partner
	// exist (plain SQL: no audit rows of its own): an account whose last
	// creation attempt failed, a job still processing and a finished one.
	setup := map[string]string{
		"account retry": `WITH p AS (
			INSERT INTO import_processes (supplier_id, external_account_number, staged_version, attempt, v2_status, latest_error)
			SELECT id, 'EXT-R', 1, 1, 'ERRORED', '{"code": "product_not_found", "detail": "x"}' FROM import_suppliers WHERE code = 'ACME' RETURNING id)
			INSERT INTO import_process_versions (process_id, version, payload) SELECT id, 1, '{}' FROM p`,
		"job cancel": `INSERT INTO import_jobs (organisation_id, supplier_id, state)
			SELECT o.id, s.id, st FROM organisations o, import_suppliers s, unnest(ARRAY['PROCESSING', 'COMPLETED']) WITH ORDINALITY AS x(st, n)
			 WHERE o.name = 'Partner' AND s.code = 'ACME' ORDER BY x.n`,
	}

	covered := map[string]bool{}
	for i, r := range runs {
		path := strings.Join(r.args[:2], " ")
		covered[path] = true
		args := slices.Clone(r.args)
		if path == "apikey revoke" {
			args[2] = prefix
		}
		if q, ok := setup[path]; ok {
			if err := d.DB.Gorm().Exec(q).Error; err != nil {
				t.Fatalf("setup for %s: %v", path, err)
			}
		}
		actor := fmt.Sprintf("walker-%d", i)
		out := mustCtl(t, append(args, "--actor", actor, "--json")...)
		if path == "apikey create" {
			var k struct{ Prefix string }
			if err := json.Unmarshal([]byte(out), &k); err != nil || k.Prefix == "" {
				t.Fatalf("apikey create: %q %v", out, err)
			}
			prefix = k.Prefix
		}
		var rows []postgres.AuditEntry
		if err := d.DB.Gorm().Raw(`SELECT id, at, actor, action, target, before, after FROM audit_log WHERE actor = ?`,
			"importctl:"+actor).Scan(&rows).Error; err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 {
			t.Errorf("importctl %s wrote %d audit rows under its actor, want 1", path, len(rows))
			continue
		}
		got := rows[0]
		// jsonb prints as {"key": value, …}.
		if got.Action != r.action || !strings.HasPrefix(got.Target, r.target) || !strings.Contains(string(got.After), r.after) {
			t.Errorf("importctl %s: audit row %s %s %s, want %s %s… containing %s", path, got.Action, got.Target, got.After, r.action, r.target, r.after)
		}
	}

	// The walk: every leaf is audited above or declared read-only.
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if !c.HasSubCommands() {
			p := strings.Join(path, " ")
			if !covered[p] && !slices.Contains(readOnlyCommands, p) {
				t.Errorf("importctl %s is neither run by this test (with its audit row checked) nor declared read-only", p)
			}
			return
		}
		for _, sub := range c.Commands() {
			walk(sub, append(slices.Clone(path), sub.Name()))
		}
	}
	walk(newRoot(), nil)

	// A refused change writes nothing.
	var before int64
	d.DB.Gorm().Raw(`SELECT count(*) FROM audit_log`).Scan(&before)
	for _, bad := range [][]string{{"supplier", "set-status", "NOPE", "Paused"}, {"account", "skip", "NOPE", "X"}, {"apikey", "revoke", "dik_nope"},
		{"account", "unskip", "ACME", "EXT-9"}, {"account", "retry", "ACME", "EXT-R"}, {"job", "cancel", "1"}, {"job", "retry", "1"}, {"job", "retry", "99"},
		{"limit", "set", "--supplier", "NOPE", "3"}, {"limit", "set", "--org", "Nobody", "3"}, {"limit", "set", "--supplier", "ACME", "--org", "Partner", "3"}} {
		if _, err := importctl(t, bad...); err == nil {
			t.Errorf("importctl %v succeeded", bad)
		}
	}
	var after int64
	d.DB.Gorm().Raw(`SELECT count(*) FROM audit_log`).Scan(&after)
	if after != before {
		t.Errorf("refused commands wrote %d audit rows", after-before)
	}

	// Without --actor the OS user is named; importctl audit shows the rows.
	mustCtl(t, "limit", "set", "3")
	var log []postgres.AuditEntry
	if err := json.Unmarshal([]byte(mustCtl(t, "audit", "--since", "1h", "--json")), &log); err != nil {
		t.Fatal(err)
	}
	if len(log) != len(runs)+1 || !strings.HasPrefix(log[0].Actor, "importctl:") || strings.HasPrefix(log[0].Actor, "importctl:walker") ||
		log[0].Action != postgres.AuditLimitSet || !jsonEqual(log[0].Before, `{"enabled": false}`) || !jsonEqual(log[0].After, `{"limit": 3, "enabled": true}`) {
		t.Errorf("audit --json: %d rows, newest %+v", len(log), log[0])
	}
	if out := mustCtl(t, "audit", "--since", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "--json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("audit since a future time: %s", out)
	}
	if out := mustCtl(t, "audit"); !strings.Contains(out, "ACTOR") || !strings.Contains(out, "importctl:walker-0") {
		t.Errorf("human audit: %s", out)
	}
	if _, err := importctl(t, "audit", "--since", "yesterday"); err == nil {
		t.Error("audit --since yesterday accepted")
	}
}

func jsonEqual(raw json.RawMessage, want string) bool {
	var a, b any
	return json.Unmarshal(raw, &a) == nil && json.Unmarshal([]byte(want), &b) == nil && fmt.Sprint(a) == fmt.Sprint(b)
}
