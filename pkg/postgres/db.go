// Package postgres is the durable store: gorm over pgx, schema managed by goose.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	pgdriver "gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/gridshift/dataimport/migrations"
)

// DB wraps the gorm handle; every store method hangs off it.
type DB struct {
	gorm *gorm.DB
	sql  *sql.DB
}

// Open connects to dsn and verifies the connection.
func Open(ctx context.Context, dsn string) (*DB, error) {
	g, err := gorm.Open(pgdriver.New(pgdriver.Config{DSN: dsn}), &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true, // we open transactions explicitly where they matter
		PrepareStmt:            false,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	})
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	s, err := g.DB()
	if err != nil {
		return nil, fmt.Errorf("open postgres: %w", err)
	}
	s.SetMaxOpenConns(40)
	s.SetMaxIdleConns(20)
	s.SetConnMaxIdleTime(5 * time.Minute)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.PingContext(pctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("ping postgres: %w", err)
	}
	return &DB{gorm: g, sql: s}, nil
}

// Close releases the pool.
func (db *DB) Close() error { return db.sql.Close() }

// Ping is used by /readyz.
func (db *DB) Ping(ctx context.Context) error { return db.sql.PingContext(ctx) }

// Gorm exposes the handle to sibling packages' tests and tooling.
func (db *DB) Gorm() *gorm.DB { return db.gorm }

// Migrate applies every embedded migration not applied yet. It is idempotent
// and safe to run from several processes: goose takes a session lock.
func (db *DB) Migrate(ctx context.Context) error {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db.sql, migrations.FS, goose.WithSessionLocker(locker))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	return nil
}

// IsUniqueViolation reports a unique-constraint conflict (SQLSTATE 23505).
func IsUniqueViolation(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "23505"
}
