package queue_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/gridshift/dataimport/pkg/queue"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// One private redis-server for the whole package; every test uses its own key.
var rdb *goredis.Client

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "queue-redis-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	r, err := testutil.StartRedis(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "private redis:", err)
		return 1
	}
	defer r.Stop()
	rdb = goredis.NewClient(&goredis.Options{Addr: r.Addr, PoolSize: 64})
	defer rdb.Close()
	return m.Run()
}

const testLease = 300 * time.Millisecond

// sem is a semaphore with its key, for tests that look at Redis directly.
type sem struct {
	*queue.Semaphore
	key string
}

func newSem(tb testing.TB, lease time.Duration) sem {
	tb.Helper()
	key := "test:sem:" + strings.ReplaceAll(tb.Name(), "/", ":")
	if err := rdb.Del(context.Background(), key).Err(); err != nil {
		tb.Fatal(err)
	}
	return sem{queue.NewSemaphore(rdb, key, lease), key}
}

func mustAcquire(t *testing.T, s sem, holder string, limit int, want bool) {
	t.Helper()
	ok, err := s.Acquire(context.Background(), holder, limit)
	if err != nil {
		t.Fatalf("Acquire(%q, %d): %v", holder, limit, err)
	}
	if ok != want {
		t.Fatalf("Acquire(%q, %d) = %v, want %v", holder, limit, ok, want)
	}
}

func mustInUse(t *testing.T, s sem, want int) {
	t.Helper()
	n, err := s.InUse(context.Background())
	if err != nil {
		t.Fatalf("InUse: %v", err)
	}
	if n != want {
		t.Fatalf("InUse = %d, want %d", n, want)
	}
}

func TestAcquireConcurrentRespectsLimit(t *testing.T) {
	t.Parallel()
	s := newSem(t, 10*time.Second)
	const goroutines, limit = 200, 3
	var (
		wg    sync.WaitGroup
		won   atomic.Int32
		start = make(chan struct{})
		errs  = make(chan error, goroutines)
	)
	for i := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ok, err := s.Acquire(context.Background(), fmt.Sprintf("DEMO_ENERGY/EXT-%d", i), limit)
			if err != nil {
				errs <- err
				return
			}
			if ok {
				won.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := won.Load(); got != limit {
		t.Fatalf("%d goroutines acquired a slot, want exactly %d", got, limit)
	}
	mustInUse(t, s, limit)
	hs, err := s.Holders(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != limit {
		t.Fatalf("Holders = %v, want %d holders", hs, limit)
	}
}

func TestAcquireSameHolderTakesOneSlot(t *testing.T) {
	t.Parallel()
	s := newSem(t, testLease)
	mustAcquire(t, s, "DEMO_ENERGY/EXT-1", 2, true)
	mustAcquire(t, s, "DEMO_ENERGY/EXT-1", 2, true)
	mustInUse(t, s, 1)
	mustAcquire(t, s, "DEMO_ENERGY/EXT-2", 2, true)
	mustInUse(t, s, 2)
	// Full, but a holder already in keeps its slot, even at a lower limit.
	mustAcquire(t, s, "DEMO_ENERGY/EXT-3", 2, false)
	mustAcquire(t, s, "DEMO_ENERGY/EXT-1", 2, true)
	mustAcquire(t, s, "DEMO_ENERGY/EXT-1", 1, true)
	mustInUse(t, s, 2)
}

func TestAcquireRefreshesLease(t *testing.T) {
	t.Parallel()
	s := newSem(t, testLease)
	mustAcquire(t, s, "A", 1, true)
	time.Sleep(200 * time.Millisecond)
	mustAcquire(t, s, "A", 1, true) // lease now ends ~500ms after start
	time.Sleep(200 * time.Millisecond)
	mustInUse(t, s, 1)
	mustAcquire(t, s, "B", 1, false)
}

func TestReleaseFrees(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSem(t, testLease)
	mustAcquire(t, s, "A", 1, true)
	mustAcquire(t, s, "B", 1, false)
	if err := s.Release(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "A"); err != nil { // idempotent
		t.Fatalf("second Release: %v", err)
	}
	if err := s.Release(ctx, "never-held"); err != nil {
		t.Fatalf("Release of unknown holder: %v", err)
	}
	mustInUse(t, s, 0)
	mustAcquire(t, s, "B", 1, true)
	if ok, err := s.Renew(ctx, "A"); err != nil || ok {
		t.Fatalf("Renew after Release = %v, %v; want false", ok, err)
	}
}

func TestExpiredLeaseIsPurged(t *testing.T) {
	t.Parallel()
	s := newSem(t, testLease)
	mustAcquire(t, s, "crashed-worker", 1, true)
	mustAcquire(t, s, "B", 1, false)
	time.Sleep(testLease + 100*time.Millisecond)
	mustAcquire(t, s, "B", 1, true)
	hs, err := s.Holders(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 1 || hs[0] != "B" {
		t.Fatalf("Holders = %v, want [B]", hs)
	}
}

func TestExpiredLeaseNotCounted(t *testing.T) {
	t.Parallel()
	s := newSem(t, testLease)
	mustAcquire(t, s, "A", 5, true)
	mustAcquire(t, s, "B", 5, true)
	mustInUse(t, s, 2)
	time.Sleep(testLease + 100*time.Millisecond)
	mustInUse(t, s, 0)
	hs, err := s.Holders(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 0 {
		t.Fatalf("Holders = %v, want none", hs)
	}
}

func TestRenewKeepsSlotAlive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSem(t, testLease)
	mustAcquire(t, s, "A", 1, true)
	// Renew every 100ms for twice the lease.
	for range 6 {
		time.Sleep(100 * time.Millisecond)
		ok, err := s.Renew(ctx, "A")
		if err != nil || !ok {
			t.Fatalf("Renew = %v, %v; want true", ok, err)
		}
	}
	mustInUse(t, s, 1)
	mustAcquire(t, s, "B", 1, false)
}

func TestRenewAfterExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSem(t, testLease)
	mustAcquire(t, s, "A", 1, true)
	time.Sleep(testLease + 100*time.Millisecond)
	ok, err := s.Renew(ctx, "A")
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		t.Fatal("Renew after lease expiry = true, want false")
	}
	mustInUse(t, s, 0) // Renew must not resurrect the slot
	if ok, err := s.Renew(ctx, "never-held"); err != nil || ok {
		t.Fatalf("Renew of unknown holder = %v, %v; want false", ok, err)
	}
}

func TestLimitChangeAppliesImmediately(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSem(t, 10*time.Second)
	mustAcquire(t, s, "A", 2, true)
	mustAcquire(t, s, "B", 2, true)
	mustAcquire(t, s, "C", 2, false)
	mustAcquire(t, s, "C", 3, true) // raised
	mustAcquire(t, s, "D", 3, false)
	// Lowered below what is in use: nobody new gets in until enough leave.
	mustAcquire(t, s, "D", 1, false)
	for _, h := range []string{"A", "B"} {
		if err := s.Release(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	mustAcquire(t, s, "D", 1, false) // C still holds the only slot
	if err := s.Release(ctx, "C"); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, s, "D", 1, true)
	// limit <= 0 means no limit, but the slot is still tracked.
	mustAcquire(t, s, "E", 0, true)
	mustInUse(t, s, 2)
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	check := func(s sem, lo, hi int) {
		t.Helper()
		n, err := s.RetryAfter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n < lo || n > hi {
			t.Fatalf("RetryAfter = %d, want in [%d, %d]", n, lo, hi)
		}
	}

	empty := newSem(t, testLease)
	check(empty, 1, 1)

	short := sem{queue.NewSemaphore(rdb, empty.key, testLease), empty.key}
	mustAcquire(t, short, "A", 1, true)
	check(short, 1, 1) // 300ms rounds up to the 1s floor

	mid := newSem(&namedTB{t, t.Name() + "/mid"}, 5*time.Second)
	mustAcquire(t, mid, "A", 1, true)
	check(mid, 4, 5)

	long := newSem(&namedTB{t, t.Name() + "/long"}, time.Hour)
	mustAcquire(t, long, "A", 1, true)
	check(long, 30, 30) // clamped
}

// namedTB gives newSem a distinct key within one test.
type namedTB struct {
	testing.TB
	name string
}

func (n *namedTB) Name() string { return n.name }

func TestKeyExpiresWithLastLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSem(t, testLease)
	mustAcquire(t, s, "A", 1, true)
	ttl, err := rdb.PTTL(ctx, s.key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 0 || ttl > testLease+10*time.Millisecond {
		t.Fatalf("key PTTL = %v, want in (0, %v]", ttl, testLease)
	}
	time.Sleep(testLease + 100*time.Millisecond)
	if n, err := rdb.Exists(ctx, s.key).Result(); err != nil || n != 0 {
		t.Fatalf("key still exists after last lease (%d, %v)", n, err)
	}
}

func TestEmptyHolderRejected(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSem(t, testLease)
	if _, err := s.Acquire(ctx, "", 1); err == nil {
		t.Error("Acquire(\"\") succeeded")
	}
	if _, err := s.Renew(ctx, ""); err == nil {
		t.Error("Renew(\"\") succeeded")
	}
	if err := s.Release(ctx, ""); err == nil {
		t.Error("Release(\"\") succeeded")
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	ctx := context.Background()
	s := newSem(b, time.Minute)
	i := 0
	for b.Loop() {
		h := fmt.Sprintf("DEMO_ENERGY/EXT-%d", i%64)
		i++
		ok, err := s.Acquire(ctx, h, 100)
		if err != nil || !ok {
			b.Fatalf("Acquire = %v, %v", ok, err)
		}
		if err := s.Release(ctx, h); err != nil {
			b.Fatal(err)
		}
	}
}

func TestRenewManyRenewsLiveAndReportsMissing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const lease = time.Second
	s := newSem(t, lease)
	// More holders than one script call takes, so the chunking is exercised.
	// They are taken with a long lease on the same key, then all cut to the
	// short lease in one round trip: on a loaded machine taking 1203 one by
	// one can outlast a short lease, which is not what this test is about.
	long := sem{queue.NewSemaphore(rdb, s.key, time.Hour), s.key}
	var held []string
	for i := range 1203 {
		h := fmt.Sprintf("H%d", i)
		mustAcquire(t, long, h, 0, true)
		held = append(held, h)
	}
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	short := make([]goredis.Z, len(held))
	for i, h := range held {
		short[i] = goredis.Z{Score: float64(now.Add(lease).UnixMilli()), Member: h}
	}
	if err := rdb.ZAddXX(ctx, s.key, short...).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "H7"); err != nil {
		t.Fatal(err)
	}
	// Renew with the short lease every quarter lease for twice the lease:
	// every live holder survives.
	for range 8 {
		time.Sleep(lease / 4)
		missing, err := s.RenewMany(ctx, append(held, "never-held"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(missing, ",") != "H7,never-held" {
			t.Fatalf("RenewMany missing = %v, want [H7 never-held]", missing)
		}
	}
	mustInUse(t, s, 1202)
	// RenewMany must not resurrect a released slot.
	if n, err := rdb.ZScore(ctx, s.key, "H7").Result(); err == nil {
		t.Fatalf("H7 came back with score %v", n)
	}
}

func TestHolderRefRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		holder string
		want   queue.SlotRef
		ok     bool
	}{
		{queue.SlotHolder(42, 3), queue.SlotRef{ProcessID: 42, Attempt: 3}, true},
		{"process:42", queue.SlotRef{ProcessID: 42}, true}, // named before slots carried the attempt
		{"process:42:0", queue.SlotRef{}, false},
		{"process:42:x", queue.SlotRef{}, false},
		{"process:", queue.SlotRef{}, false},
		{"other:1", queue.SlotRef{}, false},
	} {
		got, ok := queue.HolderRef(tc.holder)
		if got != tc.want || ok != tc.ok {
			t.Errorf("HolderRef(%q) = %v, %v; want %v, %v", tc.holder, got, ok, tc.want, tc.ok)
		}
	}
	if queue.SlotHolder(42, 3) == queue.SlotHolder(42, 4) {
		t.Fatal("two attempts of one process share a slot holder")
	}
}

// AcquireMany takes a prefix of the batch up to the limit (holders that
// already hold a slot are refreshed and not counted twice), and concurrent
// batches never take more than the limit between them.
func TestAcquireManyTakesAPrefixUnderTheLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newSem(t, 10*time.Second)
	if ok, err := s.Acquire(ctx, "P/1", 5); err != nil || !ok {
		t.Fatal(ok, err)
	}
	n, err := s.AcquireMany(ctx, []string{"P/1", "P/2", "P/3", "P/4", "P/5", "P/6", "P/7"}, 5)
	if err != nil || n != 5 {
		t.Fatalf("AcquireMany = %d, %v; want 5 (P/1 already held, P/2..P/5 taken)", n, err)
	}
	mustInUse(t, s, 5)
	if n, err := s.AcquireMany(ctx, []string{"P/9", "P/1"}, 5); err != nil || n != 0 {
		t.Fatalf("full: AcquireMany = %d, %v; want 0 (it stops at the first refusal)", n, err)
	}
	if n, err := s.AcquireMany(ctx, []string{"P/9", "P/10"}, 0); err != nil || n != 2 {
		t.Fatalf("no limit: AcquireMany = %d, %v; want 2", n, err)
	}
	mustInUse(t, s, 7)
	if _, err := s.AcquireMany(ctx, []string{"P/11", ""}, 0); err == nil {
		t.Fatal("an empty holder was accepted")
	}

	c := newSem(t, 10*time.Second)
	const batches, size, limit = 20, 7, 10
	var wg sync.WaitGroup
	var won atomic.Int32
	for b := range batches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hs := make([]string, size)
			for i := range hs {
				hs[i] = fmt.Sprintf("B%d/%d", b, i)
			}
			n, err := c.AcquireMany(ctx, hs, limit)
			if err != nil {
				t.Error(err)
			}
			won.Add(int32(n))
		}()
	}
	wg.Wait()
	if won.Load() != limit {
		t.Fatalf("concurrent batches took %d slots under a limit of %d", won.Load(), limit)
	}
	mustInUse(t, c, limit)
}

// A fenced semaphore whose slots Redis lost (FLUSHALL) does not count from
// zero: its first capped acquire holds again the slots of the attempts in
// progress that recount names, then counts. Unfenced, the same loss grants
// a whole limit more.
func TestFencedSemaphoreRecountsALostCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	inProgress := []string{"process:1:1", "process:2:1", "process:3:2"}
	var recounts atomic.Int32
	s := newSem(t, 10*time.Second)
	s.WithRecount(func(context.Context) ([]string, error) {
		recounts.Add(1)
		return inProgress, nil
	})
	lose := func() {
		if err := rdb.Del(ctx, s.key, "{"+s.key+"}:counted").Err(); err != nil {
			t.Fatal(err)
		}
	}
	lose() // a fresh Redis is a lost count too: the first acquire recounts
	if ok, err := s.Acquire(ctx, "process:4:1", 4); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if ok, err := s.Acquire(ctx, "process:5:1", 4); err != nil || ok {
		t.Fatalf("5th account under a limit of 4 with 3 in progress: %v, %v", ok, err)
	}
	if recounts.Load() != 1 {
		t.Fatalf("%d recounts, want 1", recounts.Load())
	}
	lose()
	if n, err := s.AcquireMany(ctx, []string{"process:5:1", "process:6:1"}, 4); err != nil || n != 1 {
		t.Fatalf("after the loss: AcquireMany = %d, %v; want 1 (3 in progress again, limit 4)", n, err)
	}
	mustInUse(t, s, 4)
	// Without a limit nothing needs the count: no recount.
	lose()
	if ok, err := s.Acquire(ctx, "process:7:1", 0); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if recounts.Load() != 2 {
		t.Fatalf("%d recounts, want 2", recounts.Load())
	}
	// A recount that fails is an error, never a slot granted on a lost count.
	f := newSem(t, 10*time.Second)
	if err := rdb.Del(ctx, "{"+f.key+"}:counted").Err(); err != nil {
		t.Fatal(err)
	}
	f.WithRecount(func(context.Context) ([]string, error) { return nil, fmt.Errorf("postgres down") })
	if ok, err := f.Acquire(ctx, "process:8:1", 4); err == nil || ok {
		t.Fatalf("acquire with a failed recount: %v, %v", ok, err)
	}
	// Unfenced (no recount), a loss counts from zero.
	u := newSem(t, 10*time.Second)
	for i := range 4 {
		if ok, err := u.Acquire(ctx, fmt.Sprintf("process:%d:1", 10+i), 4); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	if err := rdb.Del(ctx, u.key).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := u.Acquire(ctx, "process:20:1", 4); err != nil || !ok {
		t.Fatal("unfenced semaphore after a loss", ok, err)
	}
}
