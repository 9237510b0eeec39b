package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// fakeWrites records the statements a batcher runs; the real statement is
// tested against Postgres in staging_test.go.
type fakeWrites struct {
	mu      sync.Mutex
	batches [][]stageRow
	gate    chan struct{} // when set, the first statement waits for it
	fail    func(rows []stageRow) error
}

func (f *fakeWrites) write(_ context.Context, rows []stageRow) ([]stageOutcome, error) {
	f.mu.Lock()
	f.batches = append(f.batches, append([]stageRow(nil), rows...))
	first, gate := len(f.batches) == 1, f.gate
	f.mu.Unlock()
	if first && gate != nil {
		<-gate
	}
	if f.fail != nil {
		if err := f.fail(rows); err != nil {
			return nil, err
		}
	}
	outs := make([]stageOutcome, len(rows))
	for i, r := range rows {
		outs[i] = stageOutcome{Staged: true, ProcessID: r.SupplierID*1000 + int64(len(r.External)), Version: 1}
	}
	return outs, nil
}

func (f *fakeWrites) statements() [][]stageRow {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]stageRow(nil), f.batches...)
}

func (b *stageBatcher) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// While a statement runs, arriving rows gather and go in the next one.
func TestStageBatcherGathersWhileAStatementRuns(t *testing.T) {
	f := &fakeWrites{gate: make(chan struct{})}
	b := newStageBatcher(1, 64, f.write)
	var observed []int
	b.observe = func(rows int) { observed = append(observed, rows) } // one flusher: no race
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = b.stage(ctx, stageRow{SupplierID: 1, External: "first"}) }()
	waitUntil(t, "the first statement", func() bool { return len(f.statements()) == 1 })
	const n = 20
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := b.stage(ctx, stageRow{SupplierID: 1, External: fmt.Sprintf("acc-%02d", i)})
			if err == nil && !out.Staged {
				err = errors.New("not staged")
			}
			errs <- err
		}()
	}
	waitUntil(t, "20 queued rows", func() bool { return b.queued() == n })
	close(f.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	st := f.statements()
	if len(st) != 2 || len(st[1]) != n {
		sizes := make([]int, len(st))
		for i, s := range st {
			sizes[i] = len(s)
		}
		t.Fatalf("statement sizes %v, want [1 %d]", sizes, n)
	}
	if fmt.Sprint(observed) != "[1 20]" {
		t.Fatalf("observed statement sizes %v, want [1 20]", observed)
	}
}

// maxBatch caps a statement; the rest wait for the next one.
func TestStageBatcherCapsStatements(t *testing.T) {
	f := &fakeWrites{gate: make(chan struct{})}
	b := newStageBatcher(1, 8, f.write)
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = b.stage(ctx, stageRow{SupplierID: 1, External: "first"}) }()
	waitUntil(t, "the first statement", func() bool { return len(f.statements()) == 1 })
	for i := range 20 {
		wg.Add(1)
		go func() { defer wg.Done(); _, _ = b.stage(ctx, stageRow{SupplierID: 1, External: fmt.Sprint(i)}) }()
	}
	waitUntil(t, "20 queued rows", func() bool { return b.queued() == 20 })
	close(f.gate)
	wg.Wait()
	rows := 0
	for _, s := range f.statements()[1:] {
		if len(s) > 8 {
			t.Fatalf("a statement of %d rows, cap 8", len(s))
		}
		rows += len(s)
	}
	if rows != 20 {
		t.Fatalf("%d rows written, want 20", rows)
	}
}

// One statement may touch an account once: repeats go to later statements,
// in the order they arrived.
func TestStageBatcherRepeatsGoToLaterStatements(t *testing.T) {
	f := &fakeWrites{}
	b := newStageBatcher(1, 64, f.write)
	batch := []*stageCall{}
	for _, ext := range []string{"A", "B", "A", "C", "A", "B"} {
		batch = append(batch, &stageCall{row: stageRow{SupplierID: 1, External: ext}, done: make(chan stageReply, 1)})
	}
	b.flush(context.Background(), batch)
	var got [][]string
	for _, s := range f.statements() {
		var exts []string
		for _, r := range s {
			exts = append(exts, r.External)
		}
		got = append(got, exts)
	}
	if fmt.Sprint(got) != "[[A B C] [A B] [A]]" {
		t.Fatalf("statements %v, want [[A B C] [A B] [A]]", got)
	}
	for i, c := range batch {
		if r := <-c.done; r.err != nil || !r.out.Staged {
			t.Fatalf("call %d: %+v", i, r)
		}
	}
}

// A failed statement is retried row by row: only the bad row fails.
func TestStageBatcherIsolatesAFailingRow(t *testing.T) {
	bad := errors.New("bad row")
	f := &fakeWrites{fail: func(rows []stageRow) error {
		for _, r := range rows {
			if r.External == "bad" {
				return bad
			}
		}
		return nil
	}}
	b := newStageBatcher(1, 64, f.write)
	var batch []*stageCall
	for _, ext := range []string{"x", "bad", "y"} {
		batch = append(batch, &stageCall{row: stageRow{SupplierID: 1, External: ext}, done: make(chan stageReply, 1)})
	}
	b.flush(context.Background(), batch)
	for _, c := range batch {
		r := <-c.done
		if c.row.External == "bad" {
			if !errors.Is(r.err, bad) {
				t.Fatalf("bad row: %+v", r)
			}
			continue
		}
		if r.err != nil || !r.out.Staged {
			t.Fatalf("%s: %+v", c.row.External, r)
		}
	}
	if n := len(f.statements()); n != 4 {
		t.Fatalf("%d statements, want the batch and then 3 alone", n)
	}
}

// A caller that gives up while its row is still queued withdraws it: the
// row is never written.
func TestStageBatcherWithdrawsCancelledRows(t *testing.T) {
	f := &fakeWrites{gate: make(chan struct{})}
	b := newStageBatcher(1, 64, f.write)
	go func() { _, _ = b.stage(context.Background(), stageRow{SupplierID: 1, External: "first"}) }()
	waitUntil(t, "the first statement", func() bool { return len(f.statements()) == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := b.stage(ctx, stageRow{SupplierID: 1, External: "gone"}); errc <- err }()
	waitUntil(t, "the queued row", func() bool { return b.queued() == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	close(f.gate)
	if _, err := b.stage(context.Background(), stageRow{SupplierID: 1, External: "after"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range f.statements() {
		for _, r := range s {
			if r.External == "gone" {
				t.Fatal("a withdrawn row was written")
			}
		}
	}
}
