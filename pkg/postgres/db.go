// Package postgres is the durable store: gorm over pgx, schema managed by goose.
package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	"golang.org/x/sync/semaphore"
	pgdriver "gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/gridshift/dataimport/migrations"
)

// DB wraps the gorm handle; every store method hangs off it.
//
// readGorm/readSQL serve the reads partners poll (status, lists). They are
// the primary's handles unless UseReadReplica pointed them at a replica;
// everything else (staging, creation, post-import, operator commands, and
// every read that must see its own writes) uses gorm/sql, the primary.
type DB struct {
	gorm *gorm.DB
	sql  *sql.DB

	readGorm *gorm.DB
	readSQL  *sql.DB
	replica  bool // readSQL is DATABASE_READ_URL's, not the primary's

	dsn      string
	maxConns int
	control  controlCache  // see control_cache.go
	feed     *feedWatch    // see feed_watch.go
	stager   *stageBatcher // see stage_batch.go
	creator  *createGroup  // see create_group.go
	keeper   digestKeeper  // see landed_keep.go
	writers  *semaphore.Weighted
	// uploads bounds the connections bulk uploads hold at once to half the
	// pool, so uploads can never starve status reads (see ReceiveJob).
	uploads atomic.Pointer[semaphore.Weighted]
	// relayFloor is where the event relay's next scan starts (an xid8; see
	// positionEventsSQL).
	relayFloor atomic.Uint64
}

// defaultMaxConns bounds each pool until SetMaxConns (DATABASE_MAX_CONNS)
// says otherwise.
const defaultMaxConns = 40

// Staging statements in flight per process, and accounts per statement: a
// few statements keep Postgres busy while the next batch gathers, and 64
// rows of about 3 KB stay well inside one round trip's comfort.
const (
	stageFlushers = 4
	stageMaxBatch = 64
)

// Open connects to dsn and verifies the connection.
func Open(ctx context.Context, dsn string, opts ...Option) (*DB, error) {
	g, s, err := open(ctx, dsn, opts...)
	if err != nil {
		return nil, err
	}
	db := &DB{gorm: g, sql: s, readGorm: g, readSQL: s, dsn: dsn, control: controlCache{entries: map[string]controlEntry{}},
		feed: newFeedWatch()}
	db.stager = newStageBatcher(stageFlushers, stageMaxBatch, db.stageRows)
	db.creator = db.newCreateGroup(runtime.NumCPU())
	db.uploads.Store(semaphore.NewWeighted(uploadConns(defaultMaxConns)))
	return db, nil
}

func open(ctx context.Context, dsn string, opts ...Option) (*gorm.DB, *sql.DB, error) {
	dc := pgdriver.Config{DSN: dsn}
	var o openOptions
	for _, opt := range opts {
		opt(&o)
	}
	// No JIT in our sessions. Our statements are short reads and writes;
	// a plan whose estimate crosses jit_above_cost compiles about a hundred
	// functions on every execution. The landed read's estimate crossed it
	// after the worker analyzed tables growing under a migration, and each
	// read took 0.5-5 s of CPU instead of 1-3 ms, which filled the API's
	// pool and held every status read for seconds (make bench-scale at
	// 60,000 accounts: p99 2.1-7.7 s; auto_explain showed JIT in 35 of the
	// 40 slow plans). Sent in the startup message: no round trip.
	// c is this connection's copy of the config, but its map is shared by
	// every connection: replaced, never written to.
	dc.OptionOpenDB = append(dc.OptionOpenDB, stdlib.OptionBeforeConnect(func(_ context.Context, c *pgx.ConnConfig) error {
		params := maps.Clone(c.RuntimeParams)
		if params == nil {
			params = map[string]string{}
		}
		params["jit"] = "off"
		c.RuntimeParams = params
		return nil
	}))
	if o.sessionNice > 0 {
		dc.OptionOpenDB = append(dc.OptionOpenDB, stdlib.OptionAfterConnect(o.afterConnect))
	}
	g, err := gorm.Open(pgdriver.New(dc), &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true, // we open transactions explicitly where they matter
		PrepareStmt:            false,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	})
	if err != nil {
		return nil, nil, fmt.Errorf("open postgres: %w", err)
	}
	s, err := g.DB()
	if err != nil {
		return nil, nil, fmt.Errorf("open postgres: %w", err)
	}
	setPool(s, defaultMaxConns)
	s.SetConnMaxIdleTime(5 * time.Minute)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.PingContext(pctx); err != nil {
		_ = s.Close()
		return nil, nil, fmt.Errorf("ping postgres: %w", err)
	}
	return g, s, nil
}

// UseReadReplica sends the status and list reads (ProcessForOrganisation,
// EachProcess) to the Postgres at dsn (DATABASE_READ_URL), a streaming
// replica of this database. Call it once, before serving.
//
// The trade-off is replica lag. A status read can trail the primary by the
// replication delay (milliseconds when healthy): a status poll right after a
// create may still say IN_PROGRESS, or 404 for an account staged a moment
// ago, and a list may miss the newest rows. Partners poll anyway, so this is
// harmless for them. Anything that must see its own writes stays on the
// primary. A long streamed list on a hot standby can also be cancelled by
// recovery conflicts (max_standby_streaming_delay); the partner then
// retries the page.
func (db *DB) UseReadReplica(ctx context.Context, dsn string) error {
	g, s, err := open(ctx, dsn)
	if err != nil {
		return fmt.Errorf("DATABASE_READ_URL: %w", err)
	}
	db.useReads(g, s, true)
	return nil
}

// SeparateReads gives the reads partners poll (those UseReadReplica moves)
// a pool of their own on the primary, of DATABASE_MAX_CONNS connections
// too, unless a replica serves them already. A status read then never
// waits for a connection behind writes: with creations committing thirty
// accounts at a time, the partners' stage, create and outcome requests
// arrive in waves that held the one pool's eight connections, and status
// reads waited 10-50 ms for one (make bench, results/HISTORY.md 2026-12-08).
// It reads what the primary has committed, like the one pool did.
func (db *DB) SeparateReads(ctx context.Context) error {
	if db.readSQL != db.sql {
		return nil
	}
	g, s, err := open(ctx, db.dsn)
	if err != nil {
		return fmt.Errorf("read pool: %w", err)
	}
	db.useReads(g, s, false)
	return nil
}

func (db *DB) useReads(g *gorm.DB, s *sql.DB, replica bool) {
	db.readGorm, db.readSQL, db.replica = g, s, replica
	if db.maxConns > 0 {
		setPool(s, db.maxConns)
	}
}

// SetMaxConns sizes the pools: open and idle alike (see open).
func (db *DB) SetMaxConns(n int) {
	db.maxConns = n
	setPool(db.sql, n)
	db.uploads.Store(semaphore.NewWeighted(uploadConns(n)))
	if db.readSQL != db.sql {
		setPool(db.readSQL, n)
	}
}

// SetCreationWriters bounds the account-creation transactions this process
// runs at once (WORKER_DB_WRITERS). They are CPU- and commit-bound inside
// Postgres: more of them at once only queue there, and slow every other
// query, partners' status reads among them. Zero or less: no bound. Call it
// before creating accounts, not while they are being created.
func (db *DB) SetCreationWriters(n int) {
	db.writers = nil
	flushers := runtime.NumCPU()
	if n > 0 {
		db.writers = semaphore.NewWeighted(int64(n))
		flushers = n
	}
	// One shared transaction per writer: a flusher beyond them would only
	// wait for a writer with a batch taken too early, and a smaller one.
	db.creator = db.newCreateGroup(flushers)
}

// uploadConns is how many of a pool of n connections uploads may hold at
// once: half, and at least one.
func uploadConns(n int) int64 { return int64(max(1, n/2)) }

// setPool keeps as many idle connections as open ones: with fewer, every
// burst closes connections on release and forks new Postgres backends on
// the next, which under load cost more CPU than the queries themselves.
func setPool(s *sql.DB, n int) {
	s.SetMaxOpenConns(n)
	s.SetMaxIdleConns(n)
}

// Close releases the pools.
func (db *DB) Close() error {
	db.stopKeeping()
	err := db.sql.Close()
	if db.readSQL != db.sql {
		err = errors.Join(err, db.readSQL.Close())
	}
	return err
}

// Ping is used by /readyz.
func (db *DB) Ping(ctx context.Context) error { return db.sql.PingContext(ctx) }

// ReadReplica is the replica's readiness check, or nil without a replica.
func (db *DB) ReadReplica() interface{ Ping(context.Context) error } {
	if !db.replica {
		return nil
	}
	return replica{db.readSQL}
}

type replica struct{ s *sql.DB }

func (r replica) Ping(ctx context.Context) error { return r.s.PingContext(ctx) }

// Gorm exposes the handle to sibling packages' tests and tooling.
func (db *DB) Gorm() *gorm.DB { return db.gorm }

// Pools names this process's connection pools (the primary's, and the
// read replica's when there is one) for their metrics: a request waiting
// for a connection shows as go_sql_wait_duration_seconds_total.
func (db *DB) Pools() map[string]*sql.DB {
	pools := map[string]*sql.DB{"primary": db.sql}
	switch {
	case db.replica:
		pools["read"] = db.readSQL
	case db.readSQL != db.sql:
		pools["primary_reads"] = db.readSQL
	}
	return pools
}

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
