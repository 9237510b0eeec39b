package redis_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/gridshift/dataimport/pkg/redis"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// TestUploadSlotsBoundPerOrganisation: an organisation gets max slots, and
// another its own; a released slot is free at once; the slot of a replica
// that died (never renewed, never released) expires after one lease.
func TestUploadSlotsBoundPerOrganisation(t *testing.T) {
	r := testutil.NewRedis(t)
	opt, err := goredis.ParseURL(r.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(opt)
	defer c.Close()
	ctx := context.Background()
	const lease = 600 * time.Millisecond
	a := redis.NewUploadSlots(c, "test:upload-slots:", lease) // one replica
	b := redis.NewUploadSlots(c, "test:upload-slots:", lease) // another
	take := func(s *redis.UploadSlots, org int64) (func(), bool) {
		t.Helper()
		rel, ok, err := s.Acquire(ctx, org, 2)
		if err != nil {
			t.Fatal(err)
		}
		return rel, ok
	}
	r1, ok1 := take(a, 1)
	r2, ok2 := take(b, 1)
	if !ok1 || !ok2 {
		t.Fatal("the first two slots of an organisation were refused")
	}
	if _, ok := take(a, 1); ok {
		t.Fatal("a third slot across replicas was granted")
	}
	if rel, ok := take(a, 2); !ok {
		t.Fatal("another organisation was refused")
	} else {
		rel()
	}
	// Held slots are renewed past their lease.
	time.Sleep(2 * lease)
	if _, ok := take(a, 1); ok {
		t.Fatal("a renewed slot expired")
	}
	r1()
	r3, ok := take(a, 1)
	if !ok {
		t.Fatal("a released slot was not freed")
	}
	r3()
	r2()

	// A dead replica's slot: in the set with its expiry, never renewed.
	var now time.Time
	if now, err = c.Time(ctx).Result(); err != nil {
		t.Fatal(err)
	}
	exp := float64(now.Add(lease).UnixMilli())
	c.ZAdd(ctx, "test:upload-slots:3", goredis.Z{Score: exp, Member: "dead-1"}, goredis.Z{Score: exp, Member: "dead-2"})
	if _, ok := take(a, 3); ok {
		t.Fatal("a slot beyond the dead replica's was granted before they expired")
	}
	time.Sleep(lease + 100*time.Millisecond)
	if rel, ok := take(a, 3); !ok {
		t.Fatal("the dead replica's slots did not expire")
	} else {
		rel()
	}
}
