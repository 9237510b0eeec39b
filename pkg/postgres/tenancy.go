package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// CreateOrganisation inserts a tenant.
func (db *DB) CreateOrganisation(ctx context.Context, name string) (dataimport.Organisation, error) {
	row := organisationRow{Name: name}
	if err := db.gorm.WithContext(ctx).Create(&row).Error; err != nil {
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
	if err := db.gorm.WithContext(ctx).Create(&row).Error; err != nil {
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
}

// CreateAPIKey grants the suppliers to the organisation and stores the key's
// hash, all or nothing.
func (db *DB) CreateAPIKey(ctx context.Context, k NewAPIKey) error {
	defer db.control.invalidate()
	return db.gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var org organisationRow
		if err := tx.Where("name = ?", k.Organisation).Take(&org).Error; err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return dataimport.Errorf(dataimport.CodeNotFound, "organisation %q does not exist", k.Organisation)
			}
			return fmt.Errorf("load organisation: %w", err)
		}
		for _, code := range k.Suppliers {
			var s supplierRow
			if err := tx.Where("code = ?", code).Take(&s).Error; err != nil {
				if errors.Is(err, gorm.ErrRecordNotFound) {
					return dataimport.ErrSupplierNotFound(code)
				}
				return fmt.Errorf("load supplier: %w", err)
			}
			err := tx.Exec(
				"INSERT INTO organisation_suppliers (organisation_id, supplier_id) VALUES (?, ?) ON CONFLICT DO NOTHING", org.ID, s.ID).Error
			if err != nil {
				return fmt.Errorf("grant supplier %q: %w", code, err)
			}
		}
		if err := tx.Create(&apiKeyRow{OrganisationID: org.ID, Prefix: k.Prefix, KeyHash: k.Hash}).Error; err != nil {
			return fmt.Errorf("store api key: %w", err)
		}
		return nil
	})
}

// APIKeyByHash finds an active key by the SHA-256 of its secret.
func (db *DB) APIKeyByHash(ctx context.Context, hash []byte) (dataimport.APIKey, error) {
	var row apiKeyRow
	err := db.gorm.WithContext(ctx).Where("key_hash = ? AND revoked_at IS NULL", hash).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return dataimport.APIKey{}, dataimport.ErrAPIKeyNotFound
	}
	if err != nil {
		return dataimport.APIKey{}, fmt.Errorf("load api key: %w", err)
	}
	return dataimport.APIKey{ID: row.ID, OrganisationID: row.OrganisationID, Prefix: row.Prefix}, nil
}

// ActiveAPIKey returns the organisation of an unrevoked key; tokens issued for
// a key stop working once it is revoked (in an API process that caches keys,
// within milliseconds: control_cache.go).
func (db *DB) ActiveAPIKey(ctx context.Context, keyID int64) (dataimport.APIKey, error) {
	return cachedControl(db, "key\x00"+strconv.FormatInt(keyID, 10), func() (dataimport.APIKey, error) { return db.activeAPIKey(ctx, keyID) })
}

func (db *DB) activeAPIKey(ctx context.Context, keyID int64) (dataimport.APIKey, error) {
	var row apiKeyRow
	err := db.gorm.WithContext(ctx).Select("id, organisation_id, prefix").
		Where("id = ? AND revoked_at IS NULL", keyID).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return dataimport.APIKey{}, dataimport.ErrAPIKeyNotFound
	}
	if err != nil {
		return dataimport.APIKey{}, fmt.Errorf("load api key: %w", err)
	}
	return dataimport.APIKey{ID: row.ID, OrganisationID: row.OrganisationID, Prefix: row.Prefix}, nil
}

// RevokeAPIKey revokes the key with the given prefix (idempotent).
func (db *DB) RevokeAPIKey(ctx context.Context, prefix string) error {
	res := db.gorm.WithContext(ctx).Model(&apiKeyRow{}).Where("prefix = ?", prefix).
		Update("revoked_at", gorm.Expr("COALESCE(revoked_at, ?)", time.Now().UTC()))
	if res.Error != nil {
		return fmt.Errorf("revoke api key: %w", res.Error)
	}
	db.control.invalidate()
	if res.RowsAffected == 0 {
		return dataimport.Errorf(dataimport.CodeNotFound, "no api key with prefix %q", prefix)
	}
	return nil
}
