package postgres_test

import (
	"strings"
	"testing"
)

// make bench's status reads stalled for seconds: the worker's ANALYZE of
// the growing account tables made every connection plan the landed read
// again, from statistics that said the tables were small, and the plan
// each then kept scanned them whole for every read (100–350 ms a read),
// filling the API's pool. Planned from statistics of empty tables (the
// worst case), the plan a connection keeps reads every table through an
// index; a child table without an index on its lookup column fails too.
func TestLandedReadNeverScansATable(t *testing.T) {
	e := newEnv(t)
	e.must(e.g.Exec(`ANALYZE`).Error)
	plan, err := e.db.ExplainLandedGeneric(e.ctx)
	e.must(err)
	if strings.Contains(plan, "Seq Scan") {
		t.Fatalf("the landed read scans a table:\n%s", plan)
	}
}
