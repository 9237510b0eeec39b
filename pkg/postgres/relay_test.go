package postgres_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// A transaction that commits its event after a later-numbered one did must
// not be skipped by a reader that already passed the later one: the relay
// numbers an event only once no transaction that could still insert an
// earlier one is running.
func TestEventPositionsFollowCommitOrder(t *testing.T) {
	e := newEnv(t)
	sup := e.supplier("RELAY", false)
	p1 := e.stage(sup, "EXT-1", nil)
	p2 := e.stage(sup, "EXT-2", nil)
	// Writers elsewhere on the server (other databases too) hold the
	// snapshot's xmin back for a moment: the relay numbers events once they
	// end, so give them a few seconds.
	position := func(want int, within time.Duration) int {
		t.Helper()
		total := 0
		for deadline := time.Now().Add(within); ; time.Sleep(20 * time.Millisecond) {
			n, err := e.db.PositionEvents(e.ctx, 1000)
			e.must(err)
			if total += n; total >= want || time.Now().After(deadline) {
				return total
			}
		}
	}
	if n := position(2, 5*time.Second); n != 2 { // the two staging events
		t.Fatalf("numbered %d events, want 2", n)
	}
	var cursor int64 // a feed reader's cursor: the highest position it has read
	e.scalar(&cursor, `SELECT max(position) FROM import_process_events`)

	sqlDB, err := e.g.DB()
	e.must(err)
	begin := func() *sql.Tx {
		tx, err := sqlDB.BeginTx(e.ctx, nil)
		e.must(err)
		t.Cleanup(func() { _ = tx.Rollback() })
		return tx
	}
	insert := func(tx *sql.Tx, processID int64) {
		_, err := tx.ExecContext(e.ctx, `INSERT INTO import_process_events (process_id, event) VALUES ($1, $2)`, processID, dataimport.EventProcessed)
		e.must(err)
	}
	slow := begin() // takes its transaction id first, inserts its event last
	_, err = slow.ExecContext(e.ctx, `UPDATE import_processes SET modified_at = now() WHERE id = $1`, p1)
	e.must(err)
	fast := begin()
	insert(fast, p2)
	e.must(fast.Commit())
	insert(slow, p1)
	if n := position(1, time.Second); n != 0 {
		t.Fatalf("numbered %d events while an older transaction could still add one before them", n)
	}
	e.must(slow.Commit())
	if n := position(2, 5*time.Second); n != 2 {
		t.Fatalf("numbered %d events after both committed, want 2", n)
	}
	var after int64
	e.scalar(&after, `SELECT count(*) FROM import_process_events WHERE position > ?`, cursor)
	if after != 2 {
		t.Fatalf("a reader at position %d finds %d newer events, want both", cursor, after)
	}
}

// The relay's scan costs the events not numbered yet, not the event log:
// it starts at the floor its last full run left. From the first entry of
// the unpositioned index, it walked a dead entry for every event numbered
// since the last vacuum (with autovacuum off, the busiest statement of a
// 1.5 million-account run after the creation itself).
func TestRelayScanDoesNotGrowWithTheEventLog(t *testing.T) {
	e := newEnv(t)
	sup := e.supplier("RELAYLOG", false)
	p := e.stage(sup, "EXT-1", nil)
	const events = 60000
	e.must(e.g.Exec(`INSERT INTO import_process_events (process_id, event) SELECT ?, ? FROM generate_series(1, ?)`,
		p, dataimport.EventProcessed, events).Error)
	numbered := 0
	for deadline := time.Now().Add(30 * time.Second); numbered < events+1 && time.Now().Before(deadline); {
		n, err := e.db.PositionEvents(e.ctx, 1000)
		e.must(err)
		if numbered += n; n == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if numbered < events+1 {
		t.Fatalf("numbered %d of %d events", numbered, events+1)
	}
	// One more run that finds nothing sets the floor past them all.
	_, err := e.db.PositionEvents(e.ctx, 1000)
	e.must(err)
	var plan string
	e.must(e.g.Raw(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+postgres.PositionEventsSQL, 1000, fmt.Sprint(e.db.RelayFloor())).Row().Scan(&plan))
	var out []struct {
		Plan struct {
			SharedHit  int `json:"Shared Hit Blocks"`
			SharedRead int `json:"Shared Read Blocks"`
		} `json:"Plan"`
	}
	e.must(json.Unmarshal([]byte(plan), &out))
	if blocks := out[0].Plan.SharedHit + out[0].Plan.SharedRead; blocks > 20 {
		t.Fatalf("the relay's scan touched %d blocks with nothing to number after %d events:\n%s", blocks, events, plan)
	}
}
