package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"gorm.io/gorm"
)

const (
	settingConcurrencyLimit = "concurrency_limit"
	settingTokenSecret      = "token_secret"
	settingConsoleCSRFKey   = "console_csrf_key"
)

type settingRow struct {
	Key   string `gorm:"primaryKey"`
	Value string
}

func (settingRow) TableName() string { return "settings" }

func (db *DB) setting(ctx context.Context, key string) (string, bool, error) {
	var row settingRow
	err := db.gorm.WithContext(ctx).Where("key = ?", key).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read setting %s: %w", key, err)
	}
	return row.Value, true, nil
}

// ConcurrencyLimit returns the cluster-wide cap on accounts in progress;
// ok is false when the limit is off.
func (db *DB) ConcurrencyLimit(ctx context.Context) (limit int, ok bool, err error) {
	type setting struct {
		limit int
		ok    bool
	}
	s, err := cachedControl(db, "limit", func() (setting, error) {
		n, ok, err := db.concurrencyLimit(ctx)
		return setting{n, ok}, err
	})
	return s.limit, s.ok, err
}

func (db *DB) concurrencyLimit(ctx context.Context) (limit int, ok bool, err error) {
	v, found, err := db.setting(ctx, settingConcurrencyLimit)
	if err != nil || !found {
		return 0, false, err
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, false, fmt.Errorf("setting %s=%q: %w", settingConcurrencyLimit, v, err)
	}
	return n, true, nil
}

// SetConcurrencyLimit stores the limit (n > 0) or, with n <= 0, turns it off.
// It is the one call behind `importctl limit` and the console's limit form;
// every API replica hears of it through dataimport_control (NOTIFY).
func (db *DB) SetConcurrencyLimit(ctx context.Context, n int) error {
	defer db.control.invalidate()
	err := db.audited(ctx, AuditLimitSet, func(tx *gorm.DB) (string, any, any, error) {
		var old []string
		if err := tx.Raw(`SELECT value FROM settings WHERE key = ? FOR UPDATE`, settingConcurrencyLimit).Scan(&old).Error; err != nil {
			return "", nil, nil, err
		}
		before := limitAudit(0)
		if len(old) == 1 {
			if v, err := strconv.Atoi(old[0]); err == nil {
				before = limitAudit(v)
			}
		}
		var err error
		if n <= 0 {
			err = tx.Exec("DELETE FROM settings WHERE key = ?", settingConcurrencyLimit).Error
		} else {
			err = tx.Exec(`INSERT INTO settings (key, value) VALUES (?, ?)
				ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
				settingConcurrencyLimit, strconv.Itoa(n)).Error
		}
		return "concurrency_limit", before, limitAudit(n), err
	})
	if err != nil {
		return fmt.Errorf("set concurrency limit: %w", err)
	}
	return nil
}

// limitAudit is how the audit log shows a limit (n <= 0: off).
func limitAudit(n int) map[string]any {
	if n <= 0 {
		return map[string]any{"enabled": false}
	}
	return map[string]any{"enabled": true, "limit": n}
}

// TokenSecret returns the signing secret, storing candidate first if none is
// kept yet. The first replica to start wins; every other one reads its value.
func (db *DB) TokenSecret(ctx context.Context, candidate string) (string, error) {
	err := db.gorm.WithContext(ctx).Exec(
		"INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
		settingTokenSecret, candidate).Error
	if err != nil {
		return "", fmt.Errorf("store token secret: %w", err)
	}
	v, _, err := db.setting(ctx, settingTokenSecret)
	return v, err
}

// ConsoleCSRFKey returns the 32-byte key that authenticates the console's
// CSRF cookie, generating and storing it on first use, so every API replica
// accepts the tokens of every other.
func (db *DB) ConsoleCSRFKey(ctx context.Context) ([]byte, error) {
	candidate := make([]byte, 32)
	if _, err := rand.Read(candidate); err != nil {
		return nil, fmt.Errorf("console csrf key: %w", err)
	}
	err := db.gorm.WithContext(ctx).Exec(
		"INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
		settingConsoleCSRFKey, hex.EncodeToString(candidate)).Error
	if err != nil {
		return nil, fmt.Errorf("store console csrf key: %w", err)
	}
	v, _, err := db.setting(ctx, settingConsoleCSRFKey)
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(v)
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("setting %s is not 32 hex-encoded bytes", settingConsoleCSRFKey)
	}
	return key, nil
}
