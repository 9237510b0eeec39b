package queue_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/queue"
)

func mustCounts(t *testing.T, s sem, sup, org map[int64]int) {
	t.Helper()
	c, err := s.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(c.Suppliers) != fmt.Sprint(sup) || fmt.Sprint(c.Organisations) != fmt.Sprint(org) {
		t.Fatalf("counts = suppliers %v organisations %v; want %v %v", c.Suppliers, c.Organisations, sup, org)
	}
}

// A supplier's cap refuses that supplier's next slot while the global cap
// and other suppliers still have room; releasing one of its slots lets it
// take one again.
func TestSupplierCapRefusesOnlyThatSupplier(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSem(t, 10*time.Second)
	a, b := queue.Owner{Supplier: 1, Organisation: 10}, queue.Owner{Supplier: 2, Organisation: 10}
	caps := queue.Caps{Global: 10, Supplier: 2}
	for i, want := range []bool{true, true, false} {
		if ok, err := s.AcquireFor(ctx, fmt.Sprintf("a%d", i), a, caps); err != nil || ok != want {
			t.Fatalf("supplier 1 slot %d: %v %v, want %v", i, ok, err, want)
		}
	}
	if ok, err := s.AcquireFor(ctx, "b0", b, caps); err != nil || !ok {
		t.Fatalf("supplier 2 under its own cap: %v %v", ok, err)
	}
	// A holder already held is refreshed, never refused by its cap.
	if ok, err := s.AcquireFor(ctx, "a1", a, caps); err != nil || !ok {
		t.Fatalf("re-acquire held slot: %v %v", ok, err)
	}
	mustCounts(t, s, map[int64]int{1: 2, 2: 1}, map[int64]int{10: 3})
	if err := s.Release(ctx, "a0"); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "a0"); err != nil { // twice: counted down once
		t.Fatal(err)
	}
	mustCounts(t, s, map[int64]int{1: 1, 2: 1}, map[int64]int{10: 2})
	if ok, err := s.AcquireFor(ctx, "a2", a, caps); err != nil || !ok {
		t.Fatalf("supplier 1 after a release: %v %v", ok, err)
	}
	mustInUse(t, s, 3)
}

// An organisation's cap counts every supplier it works for; the global cap
// still applies on top of both.
func TestOrganisationCapAndGlobalCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSem(t, 10*time.Second)
	caps := queue.Caps{Global: 4, Organisation: 3}
	for i, want := range []bool{true, true, true, false} {
		own := queue.Owner{Supplier: int64(1 + i%2), Organisation: 7}
		if ok, err := s.AcquireFor(ctx, fmt.Sprintf("o7-%d", i), own, caps); err != nil || ok != want {
			t.Fatalf("org 7 slot %d: %v %v, want %v", i, ok, err, want)
		}
	}
	other := queue.Owner{Supplier: 3, Organisation: 8}
	if ok, err := s.AcquireFor(ctx, "o8-0", other, caps); err != nil || !ok {
		t.Fatalf("org 8: %v %v", ok, err)
	}
	if ok, err := s.AcquireFor(ctx, "o8-1", other, caps); err != nil || ok {
		t.Fatalf("org 8 past the global cap 4: %v %v", ok, err)
	}
	// A batch stops at the first slot its organisation's cap refuses.
	if n, err := s.AcquireManyFor(ctx, []string{"m1", "m2", "m3"}, queue.Owner{Supplier: 4, Organisation: 9}, queue.Caps{Global: 10, Organisation: 2}, false); err != nil || n != 2 {
		t.Fatalf("batch under org cap 2: %d %v", n, err)
	}
	mustCounts(t, s, map[int64]int{1: 2, 2: 1, 3: 1, 4: 2}, map[int64]int{7: 3, 8: 1, 9: 2})
}

// Expired leases leave the per-owner counts with the slots: a supplier at
// its cap whose holder crashed gets its slot back once the lease runs out.
func TestOwnerCountsFollowLeaseExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSem(t, testLease)
	own := queue.Owner{Supplier: 5, Organisation: 6}
	caps := queue.Caps{Supplier: 1}
	if ok, err := s.AcquireFor(ctx, "crashed", own, caps); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if ok, err := s.AcquireFor(ctx, "next", own, caps); err != nil || ok {
		t.Fatalf("second slot under supplier cap 1: %v %v", ok, err)
	}
	time.Sleep(testLease + 100*time.Millisecond)
	mustCounts(t, s, map[int64]int{}, map[int64]int{})
	if ok, err := s.AcquireFor(ctx, "next", own, caps); err != nil || !ok {
		t.Fatalf("after the crashed holder's lease expired: %v %v", ok, err)
	}
	mustCounts(t, s, map[int64]int{5: 1}, map[int64]int{6: 1})
}

// A lost count (FLUSHALL) is recounted with each holder's owner, so a
// supplier's cap holds right after the loss.
func TestRecountRestoresOwnerCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSem(t, 10*time.Second)
	a := queue.Owner{Supplier: 1, Organisation: 2}
	s.WithOwnedRecount(func(context.Context) ([]queue.Held, error) {
		return []queue.Held{{Holder: "p1", Owner: a}, {Holder: "p2", Owner: a}, {Holder: "p3", Owner: queue.Owner{Supplier: 9}}}, nil
	})
	lose := func() {
		if err := rdb.Del(ctx, s.key, "{"+s.key+"}:counted", "{"+s.key+"}:owners", "{"+s.key+"}:counts").Err(); err != nil {
			t.Fatal(err)
		}
	}
	lose()
	if ok, err := s.AcquireFor(ctx, "p4", a, queue.Caps{Supplier: 2}); err != nil || ok {
		t.Fatalf("supplier at cap 2 after recount: %v %v", ok, err)
	}
	mustCounts(t, s, map[int64]int{1: 2, 9: 1}, map[int64]int{2: 2})
	// Counts left behind by a partial loss (the slots gone, the counts not)
	// are recomputed, not added to.
	if err := rdb.Del(ctx, s.key, "{"+s.key+"}:counted").Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.AcquireFor(ctx, "p5", queue.Owner{Supplier: 9}, queue.Caps{Supplier: 2}); err != nil || !ok {
		t.Fatalf("supplier 9 with 1 of 2 after recount: %v %v", ok, err)
	}
	mustCounts(t, s, map[int64]int{1: 2, 9: 2}, map[int64]int{2: 2})
	mustInUse(t, s, 4)
}

// Concurrent acquirers of two suppliers never exceed either supplier's cap
// nor the global one (sampled while they run).
func TestConcurrentCapsNeverExceeded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSem(t, 10*time.Second)
	caps := queue.Caps{Global: 5, Supplier: 3}
	var over atomic.Int32
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own := queue.Owner{Supplier: int64(1 + w%2)}
			for i := range 30 {
				h := fmt.Sprintf("w%d-%d", w, i)
				ok, err := s.AcquireFor(ctx, h, own, caps)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					c, _ := s.Counts(ctx)
					n, _ := s.InUse(ctx)
					if c.Suppliers[own.Supplier] > 3 || n > 5 {
						over.Add(1)
					}
					_ = s.Release(ctx, h)
				}
			}
		}()
	}
	wg.Wait()
	if over.Load() > 0 {
		t.Fatalf("%d samples over a cap", over.Load())
	}
	mustCounts(t, s, map[int64]int{}, map[int64]int{})
}

// Fair shares: a fair batch of a supplier alone may take the whole cap;
// once another supplier has tried to acquire within the window, the batch
// stops at cap / suppliers-with-work, leaving the rest for the other.
func TestFairBatchLeavesRoomForAnotherSupplier(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSem(t, 10*time.Second)
	s.WithFairWindow(time.Second)
	bulk, other := queue.Owner{Supplier: 1}, queue.Owner{Supplier: 2}
	caps := queue.Caps{Global: 4}
	if n, err := s.AcquireManyFor(ctx, []string{"a1", "a2", "a3", "a4", "a5"}, bulk, caps, true); err != nil || n != 4 {
		t.Fatalf("supplier alone: %d %v, want the whole cap", n, err)
	}
	// Supplier 2 is refused (full) but now counts as having work.
	if ok, err := s.AcquireFor(ctx, "b1", other, caps); err != nil || ok {
		t.Fatalf("full: %v %v", ok, err)
	}
	for _, h := range []string{"a1", "a2", "a3", "a4"} {
		_ = s.Release(ctx, h)
	}
	if n, err := s.AcquireManyFor(ctx, []string{"a5", "a6", "a7", "a8"}, bulk, caps, true); err != nil || n != 2 {
		t.Fatalf("with a second supplier waiting: %d %v, want its fair share 2", n, err)
	}
	if ok, err := s.AcquireFor(ctx, "b1", other, caps); err != nil || !ok {
		t.Fatalf("the other supplier's create after the fair round: %v %v", ok, err)
	}
	// Not fair: the same batch takes what the cap allows.
	if n, err := s.AcquireManyFor(ctx, []string{"c1", "c2"}, queue.Owner{Supplier: 3}, caps, false); err != nil || n != 1 {
		t.Fatalf("unfair batch: %d %v", n, err)
	}
	// Once the others are quiet past the window the share is whole again.
	for _, h := range []string{"a5", "a6", "b1", "c1"} {
		_ = s.Release(ctx, h)
	}
	time.Sleep(1100 * time.Millisecond)
	if n, err := s.AcquireManyFor(ctx, []string{"d1", "d2", "d3", "d4"}, bulk, caps, true); err != nil || n != 4 {
		t.Fatalf("others quiet: %d %v, want 4", n, err)
	}
}

// ReleaseMany gives back slots and their owners' counts in chunks, as
// Release does one at a time: holders never held and repeats change nothing.
func TestReleaseManyFreesSlotsAndCounts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSem(t, time.Minute)
	own := queue.Owner{Supplier: 5, Organisation: 6}
	var hs []string
	for i := range 1200 { // more than one chunk
		hs = append(hs, fmt.Sprintf("h%d", i))
	}
	if n, err := s.AcquireManyFor(ctx, hs, own, queue.Caps{}, false); err != nil || n != len(hs) {
		t.Fatalf("acquire: %d %v", n, err)
	}
	if ok, err := s.AcquireFor(ctx, "other", queue.Owner{Supplier: 7, Organisation: 6}, queue.Caps{}); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := s.ReleaseMany(ctx, append(hs[:1100:1100], "never-held", "h3")); err != nil {
		t.Fatal(err)
	}
	mustInUse(t, s, 101)
	mustCounts(t, s, map[int64]int{5: 100, 7: 1}, map[int64]int{6: 101})
	if err := s.ReleaseMany(ctx, hs); err != nil {
		t.Fatal(err)
	}
	mustInUse(t, s, 1)
	mustCounts(t, s, map[int64]int{7: 1}, map[int64]int{6: 1})
	if err := s.ReleaseMany(ctx, []string{"other", ""}); err == nil {
		t.Fatal("ReleaseMany with an empty holder succeeded")
	}
}
