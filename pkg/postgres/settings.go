package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"gorm.io/gorm"
)

const (
	settingConcurrencyLimit = "concurrency_limit"
	settingTokenSecret      = "token_secret"
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
func (db *DB) SetConcurrencyLimit(ctx context.Context, n int) error {
	defer db.control.invalidate()
	q := db.gorm.WithContext(ctx)
	var err error
	if n <= 0 {
		err = q.Exec("DELETE FROM settings WHERE key = ?", settingConcurrencyLimit).Error
	} else {
		err = q.Exec(`INSERT INTO settings (key, value) VALUES (?, ?)
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
			settingConcurrencyLimit, strconv.Itoa(n)).Error
	}
	if err != nil {
		return fmt.Errorf("set concurrency limit: %w", err)
	}
	return nil
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
