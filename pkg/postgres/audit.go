package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"gorm.io/gorm"
)

// Actor names who did something: "importctl:<OS user>" (or importctl's
// --actor), "operator:<name>" from the console, "system" for anything else
// (tests, fixtures). Every state-changing store call takes it from its
// context, so no caller can change state without naming itself.
type Actor string

// ActorSystem is used when a context names no actor.
const ActorSystem Actor = "system"

type actorKey struct{}

// WithActor returns ctx carrying the actor that audit rows written under it
// name.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the actor ctx carries, ActorSystem if none.
func ActorFrom(ctx context.Context) Actor {
	if a, ok := ctx.Value(actorKey{}).(Actor); ok && strings.TrimSpace(string(a)) != "" {
		return a
	}
	return ActorSystem
}

// Audit actions (audit_log.action).
const (
	AuditSupplierCreate    = "supplier.create"
	AuditSupplierStatus    = "supplier.set_status"
	AuditTeamCreate        = "team.create"
	AuditOrgCreate         = "org.create"
	AuditAPIKeyCreate      = "apikey.create" // also grants the suppliers to the organisation
	AuditAPIKeyRevoke      = "apikey.revoke"
	AuditLimitSet          = "limit.set"
	AuditAccountSkip       = "account.skip"
	AuditStatementOpen     = "statement.open"
	AuditEmailResend       = "email.resend"
	AuditOperatorCreate    = "operator.create"
	AuditOperatorPassword  = "operator.change_password"
	AuditOperatorLogin     = "operator.login"
	AuditOperatorLogout    = "operator.logout"
	AuditWebhookCreate     = "webhook.create"
	AuditWebhookEnable     = "webhook.enable"
	AuditWebhookDisable    = "webhook.disable" // also a 410 from the receiver (actor system, disableGoneWebhook)
	AuditWebhookRotate     = "webhook.rotate_secret"
	AuditWebhookReplay     = "webhook.replay"
	AuditWebhookUpdate     = "webhook.update"  // a partner changed its endpoint (url, types, enabled, description)
	AuditSupplierUpdate    = "supplier.update" // --require-products, --market
	AuditProductsUpsert    = "products.upsert" // importctl products load, or a key with the products scope
	auditMaxActorRunes     = 200
	auditTruncationEllipse = "…"
)

// Audit writes one audit row in tx, the transaction of the change it
// records, so a rolled-back change leaves no row and a committed one always
// has its row. before and after are marshalled to JSON (nil: SQL NULL).
func (db *DB) Audit(ctx context.Context, tx *gorm.DB, actor Actor, action, target string, before, after any) error {
	who, b, a, err := auditArgs(actor, action, before, after)
	if err != nil {
		return err
	}
	if err := tx.WithContext(ctx).Exec(`INSERT INTO audit_log (actor, action, target, before, after) VALUES (?, ?, ?, ?::jsonb, ?::jsonb)`,
		who, action, target, b, a).Error; err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	return nil
}

// auditSQL is Audit for a store call that runs its transaction through
// database/sql rather than gorm; the actor comes from ctx.
func auditSQL(ctx context.Context, tx *sql.Tx, action, target string, before, after any) error {
	who, b, a, err := auditArgs(ActorFrom(ctx), action, before, after)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO audit_log (actor, action, target, before, after) VALUES ($1, $2, $3, $4::jsonb, $5::jsonb)`,
		who, action, target, b, a); err != nil {
		return fmt.Errorf("audit %s: %w", action, err)
	}
	return nil
}

// auditArgs encodes an audit row's actor (bounded), before and after.
func auditArgs(actor Actor, action string, before, after any) (who string, b, a *string, err error) {
	if b, err = auditJSON(before); err != nil {
		return "", nil, nil, fmt.Errorf("audit %s: encode before: %w", action, err)
	}
	if a, err = auditJSON(after); err != nil {
		return "", nil, nil, fmt.Errorf("audit %s: encode after: %w", action, err)
	}
	who = string(actor)
	if r := []rune(who); len(r) > auditMaxActorRunes {
		who = string(r[:auditMaxActorRunes-1]) + auditTruncationEllipse
	}
	return who, b, a, nil
}

func auditJSON(v any) (*string, error) {
	if v == nil {
		return nil, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	s := string(raw)
	return &s, nil
}

// errNoChange, returned by an audited function, means it changed nothing:
// the transaction rolls back, no audit row is written and audited returns nil.
var errNoChange = errors.New("nothing changed")

// audited runs fn in a transaction and writes the audit row fn describes in
// the same transaction. fn returns the target, before and after.
func (db *DB) audited(ctx context.Context, action string, fn func(tx *gorm.DB) (target string, before, after any, err error)) error {
	err := db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		target, before, after, err := fn(tx)
		if err != nil {
			return err
		}
		return db.Audit(ctx, tx, ActorFrom(ctx), action, target, before, after)
	})
	if errors.Is(err, errNoChange) {
		return nil
	}
	return err
}

// AuditEntry is one row of the audit log.
type AuditEntry struct {
	ID     int64           `json:"id"`
	At     time.Time       `json:"at"`
	Actor  string          `json:"actor"`
	Action string          `json:"action"`
	Target string          `json:"target"`
	Before json.RawMessage `json:"before"`
	After  json.RawMessage `json:"after"`
}

// AuditLog returns rows at or after since, newest first, at most limit.
func (db *DB) AuditLog(ctx context.Context, since time.Time, limit int) ([]AuditEntry, error) {
	if limit <= 0 {
		limit = 100
	}
	var rows []AuditEntry
	if err := db.gorm.WithContext(ctx).Raw(`SELECT id, at, actor, action, target, before, after FROM audit_log
		WHERE at >= ? ORDER BY at DESC, id DESC LIMIT ?`, since, limit).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	return rows, nil
}
