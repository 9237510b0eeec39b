// Package testutil gives integration tests private, real dependencies: a
// uniquely named Postgres database and a private redis-server, both removed
// when the test ends. Nothing here touches data a test did not create.
package testutil

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gridshift/dataimport/pkg/postgres"
)

// AdminURL is the server tests create their databases on.
func AdminURL() string {
	for _, k := range []string{"TEST_DATABASE_URL", "DATABASE_URL"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// Database is a private database for one test (or one test package).
type Database struct {
	URL   string
	DB    *postgres.DB
	admin string
}

// NewDatabase creates a uniquely named, migrated database and drops it when
// tb ends.
func NewDatabase(tb testing.TB) *Database { return NewDatabaseOn(tb, AdminURL()) }

// NewDatabaseOn is NewDatabase on the server at admin.
func NewDatabaseOn(tb testing.TB, admin string) *Database {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := createDatabase(ctx, admin)
	if err != nil {
		tb.Fatalf("test database: %v", err)
	}
	tb.Cleanup(func() { d.Drop() })
	return d
}

// CreateDatabase is NewDatabase for TestMain, where there is no testing.TB.
func CreateDatabase(ctx context.Context) (*Database, error) { return createDatabase(ctx, AdminURL()) }

func createDatabase(ctx context.Context, admin string) (*Database, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "test_dataimport_" + hex.EncodeToString(b[:])
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return nil, fmt.Errorf("connect %s (is Postgres running? `make test` starts one): %w", redact(admin), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, fmt.Errorf("create database: %w", err)
	}
	u, err := url.Parse(admin)
	if err != nil {
		return nil, fmt.Errorf("parse admin url: %w", err)
	}
	u.Path = "/" + name
	db, err := postgres.Open(ctx, u.String())
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx); err != nil {
		return nil, err
	}
	return &Database{URL: u.String(), DB: db, admin: admin}, nil
}

// Drop closes the pool and drops the database.
func (d *Database) Drop() {
	_ = d.DB.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.admin)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	name := strings.TrimPrefix(mustPath(d.URL), "/")
	_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

func mustPath(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Path
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "the database"
	}
	return u.Redacted()
}
