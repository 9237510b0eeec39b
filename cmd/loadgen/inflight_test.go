package main

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// The in-flight set holds exactly the ids added and not yet removed, under
// concurrent use by the create workers and the reader.
func TestInFlightSet(t *testing.T) {
	s := newInFlight()
	if _, ok := s.pick(); ok {
		t.Fatal("pick on an empty set found an id")
	}
	s.add("a")
	s.add("b")
	s.add("c")
	s.add("b") // twice: still one entry
	s.remove("a")
	s.remove("zz") // never added: no-op
	seen := map[string]bool{}
	for range 200 {
		id, ok := s.pick()
		if !ok {
			t.Fatal("pick found nothing with two in flight")
		}
		seen[id] = true
	}
	if len(seen) != 2 || !seen["b"] || !seen["c"] {
		t.Fatalf("picked %v, want b and c", seen)
	}
	s.remove("c")
	s.remove("b")
	if id, ok := s.pick(); ok {
		t.Fatalf("picked %q from an emptied set", id)
	}

	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				id := fmt.Sprintf("%d-%d", w, i)
				s.add(id)
				if got, ok := s.pick(); !ok || got == "" {
					t.Errorf("pick after add: %q %v", got, ok)
				}
				s.remove(id)
			}
		}()
	}
	wg.Wait()
	if len(s.ids) != 0 || len(s.pos) != 0 {
		t.Fatalf("after concurrent add/remove: %d ids, %d positions", len(s.ids), len(s.pos))
	}
}

func TestReaderStatsFinish(t *testing.T) {
	var st readerStats
	for i := 100; i >= 1; i-- {
		st.record(time.Duration(i) * time.Millisecond)
	}
	st.fail()
	st.skip()
	st.finish()
	if st.Count != 100 || st.Errors != 1 || st.Skipped != 1 {
		t.Fatalf("count %d errors %d skipped %d", st.Count, st.Errors, st.Skipped)
	}
	if st.P50 != 50*time.Millisecond || st.P99 != 99*time.Millisecond || st.Max != 100*time.Millisecond {
		t.Fatalf("p50 %s p99 %s max %s", st.P50, st.P99, st.Max)
	}
}

// The report carries the second reader as its own row.
func TestReportHasInFlightRow(t *testing.T) {
	res := &result{Accounts: 1, StatusP99: 3 * time.Millisecond, StatusLatencies: []time.Duration{3 * time.Millisecond}}
	res.StatusInFlight.record(42 * time.Millisecond)
	res.StatusInFlight.finish()
	rep := &report{Config: runConfig{StatusRate: 200}, Run: res, Ceiling: pgbenchResult{AccountTPS: 1, StageTPS: 1}}
	var row *target
	for _, tg := range rep.targets() {
		if tg.name == "Status p99 at 200 reads/s: status reads of accounts being created (open-loop)" {
			row = &tg
		}
	}
	if row == nil {
		t.Fatalf("no in-flight row in %+v", rep.targets())
	}
	if row.ok || row.measured != "p50 42.0 ms, **p99 42.0 ms**, max 42.0 ms (1 reads, 0 errors, 0 ticks with none in flight)" {
		t.Fatalf("row %+v", *row)
	}
	if err := rep.chart(t.TempDir() + "/c.png"); err != nil {
		t.Fatal(err)
	}
}
