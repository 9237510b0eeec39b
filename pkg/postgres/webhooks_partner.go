package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// A partner manages its own organisation's endpoints (CONTRACT §15); these
// reads and writes take the caller's organisation and treat another's
// endpoint as one that does not exist.

// OrgWebhookEndpoint reads endpoint id if it belongs to organisation orgID.
func (db *DB) OrgWebhookEndpoint(ctx context.Context, orgID, id int64) (WebhookEndpoint, error) {
	e, err := scanEndpoint(db.sql.QueryRowContext(ctx, `SELECT `+endpointColumns+`
		  FROM webhook_endpoints w JOIN organisations o ON o.id = w.organisation_id
		 WHERE w.id = $1 AND w.organisation_id = $2`, id, orgID))
	if errors.Is(err, sql.ErrNoRows) {
		return e, dataimport.Errorf(dataimport.CodeNotFound, "Webhook endpoint %d does not exist.", id)
	}
	if err != nil {
		return e, fmt.Errorf("read webhook endpoint %d: %w", id, err)
	}
	return e, nil
}

// OrgWebhookEndpoints lists organisation orgID's endpoints, oldest first
// (at most MaxWebhookEndpointsPerOrg).
func (db *DB) OrgWebhookEndpoints(ctx context.Context, orgID int64) ([]WebhookEndpoint, error) {
	return db.listEndpoints(ctx, `w.organisation_id = $1`, orgID)
}

// WebhookEndpointHealth is one endpoint's health (as the console shows it).
func (db *DB) WebhookEndpointHealth(ctx context.Context, id int64) (WebhookHealthRow, error) {
	rows, err := db.webhookHealth(ctx, id)
	if err != nil {
		return WebhookHealthRow{}, err
	}
	if len(rows) == 0 {
		return WebhookHealthRow{}, dataimport.Errorf(dataimport.CodeNotFound, "Webhook endpoint %d does not exist.", id)
	}
	return rows[0], nil
}

// WebhookPatch is a partial update of an endpoint: nil fields stay. The
// URL has passed the SSRF guard already.
type WebhookPatch struct {
	URL         *string
	EventTypes  *[]string
	Enabled     *bool
	Description *string
}

// UpdateWebhookEndpoint applies p to endpoint id, audited with the fields
// before and after (never the secret). Re-enabling sends the pending
// deliveries again, as the operator's enable does.
func (db *DB) UpdateWebhookEndpoint(ctx context.Context, id int64, p WebhookPatch) error {
	if p.EventTypes != nil {
		if _, err := feedEventNames(*p.EventTypes); err != nil {
			return err
		}
	}
	action := AuditWebhookUpdate
	return db.auditedWebhook(ctx, id, action, func(tx *sql.Tx) (before, after any, err error) {
		var (
			url, types  string
			enabled     bool
			description *string
		)
		if err := tx.QueryRowContext(ctx, `SELECT url, array_to_string(event_types, ','), enabled, description
			  FROM webhook_endpoints WHERE id = $1 FOR UPDATE`, id).Scan(&url, &types, &enabled, &description); err != nil {
			return nil, nil, err
		}
		b := map[string]any{"url": url, "event_types": splitTypes(types), "enabled": enabled, "description": description}
		a := map[string]any{"url": url, "event_types": splitTypes(types), "enabled": enabled, "description": description}
		if p.URL != nil {
			a["url"] = *p.URL
		}
		if p.EventTypes != nil {
			a["event_types"] = *p.EventTypes
		}
		if p.Enabled != nil {
			a["enabled"] = *p.Enabled
		}
		if p.Description != nil {
			var d *string
			if *p.Description != "" {
				d = p.Description
			}
			a["description"] = d
		}
		types2 := a["event_types"].([]string)
		var reason *string
		if !a["enabled"].(bool) {
			r := "disabled by the partner"
			reason = &r
		}
		if _, err := tx.ExecContext(ctx, `UPDATE webhook_endpoints SET url = $2, event_types = $3, enabled = $4,
			disabled_reason = CASE WHEN $4 THEN NULL WHEN enabled THEN $5 ELSE disabled_reason END,
			description = $6, updated_at = now() WHERE id = $1`,
			id, a["url"], types2, a["enabled"], reason, a["description"]); err != nil {
			return nil, nil, err
		}
		return b, a, nil
	})
}

// WebhookSecrets are the secrets that sign endpoint id's attempts now: its
// secret, and the one it replaced while the rotation's overlap lasts.
func (db *DB) WebhookSecrets(ctx context.Context, id int64) ([]string, error) {
	var cur, prev string
	err := db.sql.QueryRowContext(ctx, `SELECT secret, CASE WHEN previous_secret_expires_at > now() THEN previous_secret ELSE '' END
		  FROM webhook_endpoints WHERE id = $1`, id).Scan(&cur, &prev)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, dataimport.Errorf(dataimport.CodeNotFound, "Webhook endpoint %d does not exist.", id)
	}
	if err != nil {
		return nil, fmt.Errorf("webhook secrets %d: %w", id, err)
	}
	if prev == "" {
		return []string{cur}, nil
	}
	return []string{cur, prev}, nil
}
