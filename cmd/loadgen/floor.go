package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"
)

// The physical floor: how long Postgres itself takes to land the account
// rows the run created, with nothing of the service in between. The account
// tables are dumped (pg_dump -Fc) and restored (pg_restore: schema, data,
// indexes, constraints) into an empty database; the restore's time is the
// floor the pipeline's end-to-end time is compared with.

// floorResult is one dump and restore of the account tables.
type floorResult struct {
	PgVersion      string   `json:"pg_version"` // the server's, and of the tools used
	Tables         []string `json:"tables"`
	LeftOut        []string `json:"left_out_constraints"` // foreign keys to tables outside the dump
	DumpSeconds    float64  `json:"dump_seconds"`
	DumpBytes      int64    `json:"dump_bytes"`
	RestoreJobs    int      `json:"restore_jobs"`
	RestoreSeconds float64  `json:"restore_seconds"` // the floor
	// What the restore produced, checked against the source: a restore
	// that lost rows or indexes would be a floor too low.
	RestoredAccounts int64 `json:"restored_accounts"`
	RestoredIndexes  int   `json:"restored_indexes"`
	SourceIndexes    int   `json:"source_indexes"`
	Redeclared       int   `json:"redeclared_foreign_keys"` // checked per statement by the service, declared after the restore
}

// pgTools finds pg_dump and pg_restore of the server's major version: a
// newer pg_dump writes archives an older pg_restore cannot read, and an older
// one refuses a newer server.
func pgTools(ctx context.Context, conn *pgx.Conn) (dump, restore, version string, err error) {
	var num int
	if err := conn.QueryRow(ctx, `SELECT current_setting('server_version_num')::int, current_setting('server_version')`).Scan(&num, &version); err != nil {
		return "", "", "", fmt.Errorf("server version: %w", err)
	}
	major := strconv.Itoa(num / 10000)
	dir := filepath.Join("/usr/lib/postgresql", major, "bin")
	dump, restore = filepath.Join(dir, "pg_dump"), filepath.Join(dir, "pg_restore")
	if _, err := os.Stat(restore); err == nil {
		if _, err := os.Stat(dump); err == nil {
			return dump, restore, version, nil
		}
	}
	// Elsewhere (a Mac, another layout): the ones on PATH, if of that major.
	for _, p := range []*string{&dump, &restore} {
		name := filepath.Base(*p)
		out, err := exec.CommandContext(ctx, name, "--version").Output()
		if err != nil {
			return "", "", "", fmt.Errorf("%s %s not found (install postgresql-client-%s): %w", name, major, major, err)
		}
		f := strings.Fields(string(out))
		if len(f) == 0 || strings.Split(f[len(f)-1], ".")[0] != major {
			return "", "", "", fmt.Errorf("%s on PATH is %q, the server is %s", name, strings.TrimSpace(string(out)), version)
		}
		*p = name
	}
	return dump, restore, version, nil
}

// measureFloor dumps the account tables of dbURL's database and times
// their restore into a scratch database, dropped afterwards.
func measureFloor(ctx context.Context, dbURL string, jobs int) (*floorResult, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	defer conn.Close(ctx)
	dumpBin, restoreBin, version, err := pgTools(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	res := &floorResult{PgVersion: version, Tables: accountTables, RestoreJobs: max(jobs, 1)}
	var schema string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	// Foreign keys from an account to its supplier and import process point
	// outside the dump: they cannot be restored without those tables, so
	// they are left out (their check is not the rows' cost anyway). Keys
	// the service checks per statement (migration 00033) are not in the
	// dump at all: those within it are declared again after the restore,
	// timed with it, so the floor lands the same constraints as before.
	rows, err := conn.Query(ctx, `SELECT child, name, per_statement FROM dataimport_foreign_keys
		 WHERE child = ANY($1) AND NOT (parent = ANY($1)) ORDER BY 1, 2`, accountTables)
	if err != nil {
		return nil, fmt.Errorf("floor: constraints: %w", err)
	}
	leftOut := map[string]bool{}
	for rows.Next() {
		var table, name string
		var perStatement bool
		if err := rows.Scan(&table, &name, &perStatement); err != nil {
			return nil, fmt.Errorf("floor: constraints: %w", err)
		}
		if !perStatement {
			leftOut[" FK CONSTRAINT "+schema+" "+table+" "+name+" "] = true
		}
		res.LeftOut = append(res.LeftOut, table+"."+name)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("floor: constraints: %w", err)
	}
	var redeclare []string
	rows, err = conn.Query(ctx, `SELECT format('ALTER TABLE %I ADD CONSTRAINT %I %s', child, name, definition)
		  FROM dataimport_statement_fks WHERE child = ANY($1) AND parent = ANY($1) ORDER BY name`, accountTables)
	if err != nil {
		return nil, fmt.Errorf("floor: constraints: %w", err)
	}
	if redeclare, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return nil, fmt.Errorf("floor: constraints: %w", err)
	}
	res.Redeclared = len(redeclare)
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_index i WHERE i.indrelid::regclass::text = ANY($1)`, accountTables).Scan(&res.SourceIndexes); err != nil {
		return nil, fmt.Errorf("floor: indexes: %w", err)
	}

	dir, err := os.MkdirTemp("", "bench-scale-floor-")
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	defer os.RemoveAll(dir)
	archive := filepath.Join(dir, "accounts.dump")
	// Uncompressed (-Z 0): the restore's time is then landing the rows, not
	// inflating them.
	args := []string{"-Fc", "-Z", "0", "--no-owner", "-f", archive, "-d", dbURL}
	for _, t := range accountTables {
		args = append(args, "-t", schema+"."+t)
	}
	t0 := time.Now()
	if out, err := exec.CommandContext(ctx, dumpBin, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("floor: pg_dump: %w\n%s", err, out)
	}
	res.DumpSeconds = time.Since(t0).Seconds()
	if st, err := os.Stat(archive); err == nil {
		res.DumpBytes = st.Size()
	}
	list, err := restoreList(ctx, restoreBin, archive, leftOut)
	if err != nil {
		return nil, err
	}
	listPath := filepath.Join(dir, "restore.list")
	if err := os.WriteFile(listPath, list, 0o600); err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}

	scratch := fmt.Sprintf("bench_floor_%d", os.Getpid())
	scratchURL, err := withDatabase(dbURL, scratch)
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	dropScratch := func() error {
		_, err := conn.Exec(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS "+pgx.Identifier{scratch}.Sanitize()+" WITH (FORCE)")
		return err
	}
	if err := dropScratch(); err != nil { // left over from an interrupted run
		return nil, fmt.Errorf("floor: %w", err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{scratch}.Sanitize()); err != nil {
		return nil, fmt.Errorf("floor: scratch database: %w", err)
	}
	defer func() { _ = dropScratch() }()
	checkpoint(ctx, dbURL) // as every measurement here starts
	t0 = time.Now()
	cmd := exec.CommandContext(ctx, restoreBin, "--no-owner", "--exit-on-error", "-j", strconv.Itoa(res.RestoreJobs), "-L", listPath, "-d", scratchURL, archive)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("floor: pg_restore: %w\n%s", err, out)
	}
	if err := redeclareKeys(ctx, scratchURL, redeclare, res.RestoreJobs); err != nil {
		return nil, err
	}
	res.RestoreSeconds = time.Since(t0).Seconds()

	sc, err := pgx.Connect(ctx, scratchURL)
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	err = sc.QueryRow(ctx, `SELECT (SELECT count(*) FROM accounts),
		(SELECT count(*) FROM pg_index i WHERE i.indrelid::regclass::text = ANY($1))`, accountTables).Scan(&res.RestoredAccounts, &res.RestoredIndexes)
	_ = sc.Close(ctx)
	if err != nil {
		return nil, fmt.Errorf("floor: restored database: %w", err)
	}
	if err := dropScratch(); err != nil {
		return nil, fmt.Errorf("floor: drop scratch database: %w", err)
	}
	return res, nil
}

// redeclareKeys runs the ALTER TABLE ... ADD CONSTRAINT statements on
// scratchURL, jobs at a time as pg_restore -j declares constraints.
func redeclareKeys(ctx context.Context, scratchURL string, stmts []string, jobs int) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(max(jobs, 1))
	for _, q := range stmts {
		g.Go(func() error {
			c, err := pgx.Connect(ctx, scratchURL)
			if err != nil {
				return fmt.Errorf("floor: %w", err)
			}
			defer c.Close(context.WithoutCancel(ctx))
			if _, err := c.Exec(ctx, q); err != nil {
				return fmt.Errorf("floor: %s: %w", q, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// restoreList is the archive's table of contents without its triggers and
// the entries named in leftOut (" FK CONSTRAINT <schema> <table> <name> ").
func restoreList(ctx context.Context, restoreBin, archive string, leftOut map[string]bool) ([]byte, error) {
	out, err := exec.CommandContext(ctx, restoreBin, "-l", archive).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("floor: pg_restore -l: %w\n%s", err, ee.Stderr)
		}
		return nil, fmt.Errorf("floor: pg_restore -l: %w", err)
	}
	var b bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(out))
	dropped := 0
	for sc.Scan() {
		line := sc.Text()
		// Triggers call the service's functions, which are not in the
		// dump, and a restore creates them after the rows, so they cost
		// the floor nothing.
		if strings.Contains(line, " TRIGGER ") {
			continue
		}
		skip := false
		for k := range leftOut {
			if strings.Contains(line+" ", k) {
				skip = true
				break
			}
		}
		if skip {
			dropped++
			continue
		}
		b.WriteString(line + "\n")
	}
	if dropped != len(leftOut) {
		return nil, fmt.Errorf("floor: %d of %d foreign keys to leave out found in the archive's list", dropped, len(leftOut))
	}
	return b.Bytes(), nil
}

// withDatabase is dbURL naming database name instead.
func withDatabase(dbURL, name string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", fmt.Errorf("database URL must be postgres://…: %q", redactURL(dbURL))
	}
	u.Path = "/" + name
	return u.String(), nil
}

func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxx")
			return u.String()
		}
	}
	return s
}
