package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// CreateOrganisation inserts a tenant.
func (db *DB) CreateOrganisation(ctx context.Context, name string) (dataimport.Organisation, error) {
	row := organisationRow{Name: name}
	err := db.audited(ctx, AuditOrgCreate, func(tx *gorm.DB) (string, any, any, error) {
		return "org:" + name, nil, map[string]string{"name": name}, tx.Create(&row).Error
	})
	if err != nil {
		if IsUniqueViolation(err) {
			return dataimport.Organisation{}, dataimport.Errorf(dataimport.CodeInvalid, "organisation %q already exists", name)
		}
		return dataimport.Organisation{}, fmt.Errorf("create organisation %q: %w", name, err)
	}
	return row.domain(), nil
}

// CreateTeam inserts an operations team.
func (db *DB) CreateTeam(ctx context.Context, name string) (dataimport.Team, error) {
	defer db.control.invalidate()
	row := teamRow{Name: name}
	err := db.audited(ctx, AuditTeamCreate, func(tx *gorm.DB) (string, any, any, error) {
		return "team:" + name, nil, map[string]string{"name": name}, tx.Create(&row).Error
	})
	if err != nil {
		if IsUniqueViolation(err) {
			return dataimport.Team{}, dataimport.Errorf(dataimport.CodeInvalid, "team %q already exists", name)
		}
		return dataimport.Team{}, fmt.Errorf("create team %q: %w", name, err)
	}
	return dataimport.Team{ID: row.ID, Name: row.Name, CreatedAt: row.CreatedAt}, nil
}

// TeamByName loads a team; a missing one is the create-account 400.
func (db *DB) TeamByName(ctx context.Context, name string) (dataimport.Team, error) {
	return cachedControl(db, "team\x00"+name, func() (dataimport.Team, error) { return db.teamByName(ctx, name) })
}

func (db *DB) teamByName(ctx context.Context, name string) (dataimport.Team, error) {
	var row teamRow
	err := db.gorm.WithContext(ctx).Where("name = ?", name).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return dataimport.Team{}, dataimport.Errorf(dataimport.CodeTeamDoesNotExist, "Operations team %q does not exist.", name)
	}
	if err != nil {
		return dataimport.Team{}, fmt.Errorf("load team %q: %w", name, err)
	}
	return dataimport.Team{ID: row.ID, Name: row.Name, CreatedAt: row.CreatedAt}, nil
}

// NewAPIKey is what the store needs to persist a freshly generated key.
type NewAPIKey struct {
	Organisation string
	Suppliers    []string
	Prefix       string
	Hash         []byte
	Scopes       []string // dataimport.Scopes
}

// CreateAPIKey grants the suppliers to the organisation and stores the key's
// hash, all or nothing.
func (db *DB) CreateAPIKey(ctx context.Context, k NewAPIKey) error {
	defer db.control.invalidate()
	return db.audited(ctx, AuditAPIKeyCreate, func(tx *gorm.DB) (string, any, any, error) {
		var org organisationRow
		if err := tx.Where("name = ?", k.Organisation).Take(&org).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return "", nil, nil, dataimport.Errorf(dataimport.CodeNotFound, "organisation %q does not exist", k.Organisation)
			}
			return "", nil, nil, fmt.Errorf("load organisation: %w", err)
		}
		var granted []string // grants this call added (the audit's "after")
		for _, code := range k.Suppliers {
			var s supplierRow
			if err := tx.Where("code = ?", code).Take(&s).Error; err != nil {
				if errors.Is(err, gorm.ErrRecordNotFound) {
					return "", nil, nil, dataimport.ErrSupplierNotFound(code)
				}
				return "", nil, nil, fmt.Errorf("load supplier: %w", err)
			}
			res := tx.Exec(
				"INSERT INTO organisation_suppliers (organisation_id, supplier_id) VALUES (?, ?) ON CONFLICT DO NOTHING", org.ID, s.ID)
			if res.Error != nil {
				return "", nil, nil, fmt.Errorf("grant supplier %q: %w", code, res.Error)
			}
			if res.RowsAffected == 1 {
				granted = append(granted, code)
			}
		}
		scopes := "{" + strings.Join(k.Scopes, ",") + "}" // validated words: no quoting needed
		if err := tx.Exec("INSERT INTO api_keys (organisation_id, prefix, key_hash, scopes) VALUES (?, ?, ?, ?::text[])",
			org.ID, k.Prefix, k.Hash, scopes).Error; err != nil {
			return "", nil, nil, fmt.Errorf("store api key: %w", err)
		}
		// The key's secret never enters the log: its prefix identifies it.
		return "apikey:" + k.Prefix, nil, map[string]any{"organisation": k.Organisation, "suppliers": k.Suppliers, "scopes": k.Scopes,
			"newly_granted_suppliers": granted}, nil
	})
}

// APIKeyByHash finds an active key by the SHA-256 of its secret.
func (db *DB) APIKeyByHash(ctx context.Context, hash []byte) (dataimport.APIKey, error) {
	return db.loadAPIKey(ctx, "key_hash = $1", hash)
}

// ActiveAPIKey returns the organisation of an unrevoked key; tokens issued for
// a key stop working once it is revoked (in an API process that caches keys,
// within milliseconds: control_cache.go).
func (db *DB) ActiveAPIKey(ctx context.Context, keyID int64) (dataimport.APIKey, error) {
	return cachedControl(db, "key\x00"+strconv.FormatInt(keyID, 10), func() (dataimport.APIKey, error) { return db.activeAPIKey(ctx, keyID) })
}

func (db *DB) activeAPIKey(ctx context.Context, keyID int64) (dataimport.APIKey, error) {
	return db.loadAPIKey(ctx, "id = $1", keyID)
}

// loadAPIKey loads the active key matching where (one $1 parameter).
func (db *DB) loadAPIKey(ctx context.Context, where string, arg any) (dataimport.APIKey, error) {
	var k dataimport.APIKey
	var scopes string
	err := db.sql.QueryRowContext(ctx, `SELECT id, organisation_id, prefix, array_to_string(scopes, ',')
		FROM api_keys WHERE `+where+` AND revoked_at IS NULL`, arg).Scan(&k.ID, &k.OrganisationID, &k.Prefix, &scopes)
	if errors.Is(err, sql.ErrNoRows) {
		return dataimport.APIKey{}, dataimport.ErrAPIKeyNotFound
	}
	if err != nil {
		return dataimport.APIKey{}, fmt.Errorf("load api key: %w", err)
	}
	if scopes != "" {
		k.Scopes = strings.Split(scopes, ",")
	}
	return k, nil
}

// RevokeAPIKey revokes the key with the given prefix (idempotent).
func (db *DB) RevokeAPIKey(ctx context.Context, prefix string) error {
	err := db.audited(ctx, AuditAPIKeyRevoke, func(tx *gorm.DB) (string, any, any, error) {
		var before []struct{ RevokedAt *time.Time }
		if err := tx.Raw(`SELECT revoked_at FROM api_keys WHERE prefix = ? FOR UPDATE`, prefix).Scan(&before).Error; err != nil {
			return "", nil, nil, err
		}
		if len(before) == 0 {
			return "", nil, nil, dataimport.Errorf(dataimport.CodeNotFound, "no api key with prefix %q", prefix)
		}
		var after []time.Time
		if err := tx.Raw(`UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE prefix = ? RETURNING revoked_at`,
			time.Now().UTC(), prefix).Scan(&after).Error; err != nil {
			return "", nil, nil, err
		}
		return "apikey:" + prefix, map[string]any{"revoked_at": before[0].RevokedAt}, map[string]any{"revoked_at": after[0]}, nil
	})
	db.control.invalidate()
	if _, ok := dataimport.AsError(err); ok {
		return err
	}
	if err != nil {
		return fmt.Errorf("revoke api key: %w", err)
	}
	return nil
}
