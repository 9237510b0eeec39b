package postgres

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"time"

	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Operator is a person who may use the console.
type Operator struct {
	ID                 int64
	Name               string
	PasswordHash       string
	MustChangePassword bool
	CreatedAt          time.Time
}

// ErrOperatorNotFound means no operator (or no live session) matched.
var ErrOperatorNotFound = errors.New("operator not found")

var operatorName = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,64}$`)

// ValidOperatorName mirrors the CHECK of operators.name (migration 00013).
func ValidOperatorName(name string) bool { return operatorName.MatchString(name) }

// CreateOperator stores an operator whose password must be changed at the
// first login (the one-time password importctl printed).
func (db *DB) CreateOperator(ctx context.Context, name, passwordHash string) error {
	if !ValidOperatorName(name) {
		return dataimport.Errorf(dataimport.CodeInvalid, "operator name %q: use 1-64 letters, digits, '_', '.', '@' or '-'", name)
	}
	err := db.audited(ctx, AuditOperatorCreate, func(tx *gorm.DB) (string, any, any, error) {
		err := tx.Exec(`INSERT INTO operators (name, password_hash, must_change_password) VALUES (?, ?, true)`, name, passwordHash).Error
		return "operator:" + name, nil, map[string]any{"name": name, "must_change_password": true}, err
	})
	if IsUniqueViolation(err) {
		return dataimport.Errorf(dataimport.CodeInvalid, "operator %q already exists (importctl operator reset-password %s gives a new one-time password)", name, name)
	}
	if err != nil {
		return fmt.Errorf("create operator %q: %w", name, err)
	}
	return nil
}

// SetOperatorPassword replaces an operator's password. mustChange says
// whether it is a one-time password (an operator reset) or the operator's
// own choice. Every session of the operator ends with any change, except
// keepSession (the token hash of the session that made the change; nil for
// none): a session opened with a one-time password, perhaps by whoever else
// saw it, must not gain full access when the operator picks their own.
func (db *DB) SetOperatorPassword(ctx context.Context, name, passwordHash string, mustChange bool, keepSession []byte) error {
	action := AuditOperatorPassword
	err := db.audited(ctx, action, func(tx *gorm.DB) (string, any, any, error) {
		var ids []int64
		if err := tx.Raw(`UPDATE operators SET password_hash = ?, must_change_password = ?, password_changed_at = now()
			WHERE name = ? RETURNING id`, passwordHash, mustChange, name).Scan(&ids).Error; err != nil {
			return "", nil, nil, err
		}
		if len(ids) == 0 {
			return "", nil, nil, ErrOperatorNotFound
		}
		// hex, as elsewhere: gorm would expand a []byte into a list.
		if err := tx.Exec(`DELETE FROM operator_sessions WHERE operator_id = ? AND token_hash IS DISTINCT FROM decode(NULLIF(?, ''), 'hex')`,
			ids[0], hex.EncodeToString(keepSession)).Error; err != nil {
			return "", nil, nil, err
		}
		// The hash is never logged; only that it changed and how.
		return "operator:" + name, nil, map[string]any{"must_change_password": mustChange}, nil
	})
	if err != nil {
		return fmt.Errorf("set password of operator %q: %w", name, err)
	}
	return nil
}

// OperatorByName loads an operator with the password hash, for login.
func (db *DB) OperatorByName(ctx context.Context, name string) (Operator, error) {
	var rows []Operator
	if err := db.gorm.WithContext(ctx).Raw(`SELECT id, name, password_hash, must_change_password, created_at
		FROM operators WHERE name = ?`, name).Scan(&rows).Error; err != nil {
		return Operator{}, fmt.Errorf("load operator: %w", err)
	}
	if len(rows) == 0 {
		return Operator{}, ErrOperatorNotFound
	}
	return rows[0], nil
}

// Session token hashes travel as hex: gorm would expand a []byte argument
// of a raw statement into a list.

// CreateSession stores a new session (the SHA-256 of its token) and audits
// the login. Expired sessions are deleted on the way.
func (db *DB) CreateSession(ctx context.Context, op Operator, tokenHash []byte, expires time.Time) error {
	err := db.audited(ctx, AuditOperatorLogin, func(tx *gorm.DB) (string, any, any, error) {
		if err := tx.Exec(`DELETE FROM operator_sessions WHERE expires_at < now()`).Error; err != nil {
			return "", nil, nil, err
		}
		err := tx.Exec(`INSERT INTO operator_sessions (token_hash, operator_id, expires_at) VALUES (decode(?, 'hex'), ?, ?)`, hex.EncodeToString(tokenHash), op.ID, expires).Error
		return "operator:" + op.Name, nil, map[string]any{"session_expires_at": expires.UTC()}, err
	})
	if err != nil {
		return fmt.Errorf("create session: %w", err)
	}
	return nil
}

// SessionOperator returns the operator of a live session.
func (db *DB) SessionOperator(ctx context.Context, tokenHash []byte) (Operator, error) {
	var rows []Operator
	if err := db.gorm.WithContext(ctx).Raw(`SELECT o.id, o.name, o.password_hash, o.must_change_password, o.created_at
		FROM operator_sessions s JOIN operators o ON o.id = s.operator_id
		WHERE s.token_hash = decode(?, 'hex') AND s.expires_at > now()`, hex.EncodeToString(tokenHash)).Scan(&rows).Error; err != nil {
		return Operator{}, fmt.Errorf("load session: %w", err)
	}
	if len(rows) == 0 {
		return Operator{}, ErrOperatorNotFound
	}
	return rows[0], nil
}

// EndSession deletes a session (logout).
func (db *DB) EndSession(ctx context.Context, op Operator, tokenHash []byte) error {
	err := db.audited(ctx, AuditOperatorLogout, func(tx *gorm.DB) (string, any, any, error) {
		res := tx.Exec(`DELETE FROM operator_sessions WHERE token_hash = decode(?, 'hex')`, hex.EncodeToString(tokenHash))
		if res.Error == nil && res.RowsAffected == 0 {
			return "", nil, nil, errNoChange
		}
		return "operator:" + op.Name, nil, nil, res.Error
	})
	if err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	return nil
}
