package postgres

import (
	"context"
	"fmt"
	"regexp"

	"github.com/pressly/goose/v3"

	"github.com/gridshift/dataimport/migrations"
)

// CreationRoundTrips exposes the creations' round-trip counter to the tests.
func CreationRoundTrips() int64 { return roundTrips.Load() }

// CreationTransactions counts the creation transactions sent.
func CreationTransactions() int64 { return transactions.Load() }

// SetPlatformNumbers replaces the platform-number generator until the
// returned restore is called.
func SetPlatformNumbers(f func() (string, error)) (restore func()) {
	old := platformNumbers
	platformNumbers = f
	return func() { platformNumbers = old }
}

// CreationWritersPeak returns the most creation transactions seen at once
// since the last call, and starts counting again.
func CreationWritersPeak() int64 { return writersPeak.Swap(writersBusy.Load()) }

// InternalConflicts lists the unique keys DataRefused leaves to a retry.
func InternalConflicts() []string {
	out := make([]string, 0, len(internalConflicts))
	for name := range internalConflicts {
		out = append(out, name)
	}
	return out
}

// PositionEventsSQL is the relay's statement; RelayFloor where its next
// scan starts.
const PositionEventsSQL = positionEventsSQL

func (db *DB) RelayFloor() uint64 { return db.relayFloor.Load() }

// UpsertFailuresFrom runs the one failure-recording statement over query's
// rows (organisation_id, supplier_id, external_account_number, source,
// error, job_id, line, n), for tests and benchmarks that seed records.
func (db *DB) UpsertFailuresFrom(ctx context.Context, query string, args ...any) error {
	_, err := db.sql.ExecContext(ctx, fmt.Sprintf(upsertFailures, query), args...)
	return err
}

// RecordSupplierEvent writes a supplier's event in a transaction of its own.
func (db *DB) RecordSupplierEvent(ctx context.Context, supplierID int64, event string, data any) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := recordSupplierEvent(ctx, tx, supplierID, event, data); err != nil {
		return err
	}
	return tx.Commit()
}

// CreationsQueued is how many per-account creations wait for a shared
// transaction.
func (db *DB) CreationsQueued() int {
	db.creator.mu.Lock()
	defer db.creator.mu.Unlock()
	return len(db.creator.queue)
}

// CreationGroupFallbacks counts shared creation transactions that failed and
// handed their accounts back to be created alone.
func CreationGroupFallbacks() int64 { return groupFallbacks.Load() }

// LandedTables are the tables the landed form reads, as landedSelect names
// them.
func LandedTables() []string {
	var out []string
	seen := map[string]bool{"accounts": true}
	for _, m := range regexp.MustCompile(`FROM (\w+) \w+`).FindAllStringSubmatch(landedSelect, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	return append([]string{"accounts"}, out...)
}

// LandedSelect is the landed statement, without its WHERE clause.
const LandedSelect = landedSelect

// LiveLandedDigest reads the account back from the tables, past any kept
// digest.
func (db *DB) LiveLandedDigest(ctx context.Context, platformNumber string) (string, int64, error) {
	m, err := db.readLanded(ctx, `WHERE a.platform_account_number = $1`, platformNumber)
	if err != nil {
		return "", 0, err
	}
	for _, l := range m {
		return l.Digest, l.Version, nil
	}
	return "", 0, fmt.Errorf("no account %s", platformNumber)
}

// WaitKept waits until the digests the reads computed are kept.
func (db *DB) WaitKept() { db.waitKept() }

// KeepLandedDigest keeps a digest as a status read that read version would.
func (db *DB) KeepLandedDigest(ctx context.Context, accountID, version int64, digest string) error {
	return db.keepDigests(ctx, map[int64]LandedAccount{accountID: {AccountID: accountID, Version: version, Digest: digest}})
}

// MigrateTo moves the schema up or down to the given migration version.
func (db *DB) MigrateTo(ctx context.Context, version int64) error {
	p, err := goose.NewProvider(goose.DialectPostgres, db.sql, migrations.FS)
	if err != nil {
		return err
	}
	current, err := p.GetDBVersion(ctx)
	if err != nil {
		return err
	}
	if version < current {
		_, err = p.DownTo(ctx, version)
	} else {
		_, err = p.UpTo(ctx, version)
	}
	return err
}
