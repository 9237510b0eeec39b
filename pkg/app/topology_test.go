package app_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	goredis "github.com/redis/go-redis/v9"

	"github.com/gridshift/dataimport/pkg/config"
	"github.com/gridshift/dataimport/pkg/queue"
	"github.com/gridshift/dataimport/pkg/redis"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// The whole pipeline (api, worker, semaphore, notifier, asynq) through a
// Sentinel: REDIS_SENTINEL_ADDRS/MASTER instead of REDIS_URL.
func TestPipelineThroughSentinel(t *testing.T) {
	s := testutil.NewSentinel(t, "dataimport")
	p := newPipeline(t, s.Use)
	p.StartWorker()
	p.stage("EXT-1")
	if r := p.create("EXT-1", nil); r.Status != http.StatusCreated {
		t.Fatalf("create through sentinel: %d %s", r.Status, r.Body)
	}
	if st := p.status("EXT-1"); st["status"] != "COMPLETED" {
		t.Fatalf("status: %v", st)
	}
	// The traffic went to the master the sentinel names, not to REDIS_URL's.
	ctx := context.Background()
	master := goredis.NewClient(&goredis.Options{Addr: s.Master.Addr})
	defer master.Close()
	if keys := master.Keys(ctx, "asynq:*").Val(); len(keys) == 0 {
		t.Fatal("no asynq keys on the sentinel's master")
	}
	other := goredis.NewClient(&goredis.Options{Addr: p.Redis.Addr})
	defer other.Close()
	if n := other.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("%d keys on the stack's own redis-server, which the configuration no longer names", n)
	}
}

// Redis Cluster: the semaphore's one-key Lua scripts, asynq's enqueue and the
// notifier's PSUBSCRIBE through the same Connect the processes use, then the
// whole pipeline on it.
func TestRedisCluster(t *testing.T) {
	rc := testutil.NewRedisCluster(t, 3)
	cfg := config.Config{RedisClusterAddrs: rc.Addrs}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rdb, opt, err := redis.Connect(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if _, ok := rdb.(*goredis.ClusterClient); !ok {
		t.Fatalf("client is %T, want a cluster client", rdb)
	}
	if _, ok := opt.(asynq.RedisClusterClientOpt); !ok {
		t.Fatalf("asynq option is %T, want RedisClusterClientOpt", opt)
	}

	// Keys in different slots (so on different nodes), limit 2 across holders;
	// fenced as the services' semaphore is (its marker shares the key's slot).
	for _, key := range []string{"sem:a", "sem:b", "sem:c"} {
		sem := queue.NewSemaphore(rdb, key, time.Minute).WithRecount(func(context.Context) ([]string, error) { return nil, nil })
		for i, h := range []string{"h1", "h2", "h3"} {
			ok, err := sem.Acquire(ctx, h, 2)
			if err != nil || ok != (i < 2) {
				t.Fatalf("%s acquire %s: %v %v", key, h, ok, err)
			}
		}
		if n, err := sem.InUse(ctx); err != nil || n != 2 {
			t.Fatalf("%s in use: %d %v", key, n, err)
		}
		must(t, sem.Release(ctx, "h1"))
		if ok, err := sem.Acquire(ctx, "h3", 2); err != nil || !ok {
			t.Fatalf("%s acquire after release: %v %v", key, ok, err)
		}
		if hs, err := sem.Holders(ctx); err != nil || !slices.Equal(hs, []string{"h2", "h3"}) && !slices.Equal(hs, []string{"h3", "h2"}) {
			t.Fatalf("%s holders: %v %v", key, hs, err)
		}
	}
	slots := map[string]bool{}
	for _, key := range []string{"sem:a", "sem:b", "sem:c"} {
		n, err := rdb.(*goredis.ClusterClient).MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		slots[n.Options().Addr] = true
	}
	if len(slots) < 2 {
		t.Fatalf("semaphore keys all on one node (%v): the test proves nothing about slots", slots)
	}

	// Pub/sub: a publish through any node reaches the one pattern subscription.
	n := queue.NewNotifier(rdb, "test:outcome:")
	nctx, stop := context.WithCancel(ctx)
	defer stop()
	go n.Run(nctx)
	ch, unwatch := n.Watch(42)
	defer unwatch()
	deadline := time.After(5 * time.Second)
	for got := false; !got; {
		must(t, n.Publish(ctx, 42)) // repeated until the subscription is up
		select {
		case <-ch:
			got = true
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatal("no outcome signal through the cluster")
		}
	}

	// The whole pipeline on the cluster.
	p := newPipeline(t, rc.Use)
	p.StartWorker()
	p.stage("EXT-1")
	if r := p.create("EXT-1", nil); r.Status != http.StatusCreated {
		t.Fatalf("create on the cluster: %d %s", r.Status, r.Body)
	}
	if keys := clusterKeys(t, rc, "asynq:*"); len(keys) == 0 {
		t.Fatal("no asynq keys in the cluster")
	}
}

func clusterKeys(t *testing.T, rc *testutil.RedisCluster, pattern string) []string {
	t.Helper()
	var all []string
	for _, a := range rc.Addrs {
		c := goredis.NewClient(&goredis.Options{Addr: a})
		all = append(all, c.Keys(context.Background(), pattern).Val()...)
		_ = c.Close()
	}
	return all
}

// DATABASE_READ_URL: status and list reads come from the replica, while
// staging, creation and their read-your-writes checks use the primary. The
// "replica" is a second private database with the same schema and different
// rows, so the test shows where each read goes (real streaming replication
// only adds lag).
func TestReadReplicaRouting(t *testing.T) {
	replica := testutil.NewDatabase(t)
	p := newPipeline(t, func(c *config.Config) { c.DatabaseReadURL = replica.URL })
	p.StartWorker()
	rg := replica.DB.Gorm()
	// The tenancy rows as replication would have copied them, and one process
	// that exists only on the replica.
	for _, table := range []string{"organisations", "import_suppliers", "organisation_suppliers"} {
		var rows []map[string]any
		must(t, p.DB.Gorm().Table(table).Find(&rows).Error)
		must(t, rg.Table(table).Create(&rows).Error)
	}
	supplierID := p.count(`SELECT id FROM import_suppliers WHERE code = 'DEMO_ENERGY'`)
	must(t, rg.Exec(`INSERT INTO import_processes (supplier_id, external_account_number, status, staged_version)
		VALUES (?, 'EXT-REPLICA', 'UNKNOWN', 1)`, supplierID).Error)

	p.stage("EXT-1") // a write: primary only
	if n := p.count(`SELECT count(*) FROM import_processes WHERE external_account_number = 'EXT-1'`); n != 1 {
		t.Fatalf("EXT-1 on the primary: %d", n)
	}
	var onReplica int64
	must(t, rg.Raw(`SELECT count(*) FROM import_processes`).Scan(&onReplica).Error)
	if onReplica != 1 {
		t.Fatalf("staging wrote to the replica: %d processes there", onReplica)
	}
	statusOf := func(ext string) testutil.Response {
		return p.As(p.token, http.MethodGet, "/v1/data-import/account-transfer-status/DEMO_ENERGY/"+ext+"/", nil)
	}
	if r := statusOf("EXT-1"); r.Status != http.StatusNotFound {
		t.Fatalf("status of EXT-1, not yet on the replica: %d %s", r.Status, r.Body)
	}
	if r := statusOf("EXT-REPLICA"); r.Status != http.StatusOK || r.JSON()["external_account_number"] != "EXT-REPLICA" {
		t.Fatalf("status of the replica-only process: %d %s", r.Status, r.Body)
	}
	for _, path := range []string{"/v1/data-import/all-account-import-processes/DEMO_ENERGY/",
		"/v1/data-import/pending-account-import-processes/DEMO_ENERGY/?page_size=10"} {
		r := p.As(p.token, http.MethodGet, path, nil)
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"EXT-REPLICA"`) || strings.Contains(string(r.Body), `"EXT-1"`) {
			t.Fatalf("%s did not come from the replica: %d %s", path, r.Status, r.Body)
		}
	}

	// Creation reads its own writes on the primary, whatever the replica says.
	r := p.create("EXT-1", nil)
	if r.Status != http.StatusCreated {
		t.Fatalf("create with a lagging replica: %d %s", r.Status, r.Body)
	}
	// A lagging replica that has the staging but not yet the creation: the
	// status read shows the replica's older state (the documented trade-off).
	must(t, rg.Exec(`INSERT INTO import_processes (supplier_id, external_account_number, status, v2_status, staged_version)
		VALUES (?, 'EXT-1', 'IN_PROGRESS', 'IN_PROGRESS', 1)`, supplierID).Error)
	if st := p.status("EXT-1"); st["status"] != "IN_PROGRESS" {
		t.Fatalf("status should come from the lagging replica: %v", st)
	}
	if n := p.count(`SELECT count(*) FROM import_processes WHERE external_account_number = 'EXT-1' AND status = 'COMPLETED'`); n != 1 {
		t.Fatal("EXT-1 not COMPLETED on the primary")
	}
	if rd := p.Request(http.MethodGet, "/readyz", nil); rd.Status != http.StatusOK || !strings.Contains(string(rd.Body), `"postgres_replica":"ok"`) {
		t.Fatalf("readyz: %d %s", rd.Status, rd.Body)
	}
}

// Without a replica, status reads have a pool of their own on the primary:
// with every connection of the write pool held (a wave of creates and
// stages committing), an account's status still answers at once.
func TestStatusReadsDoNotWaitForTheWritePool(t *testing.T) {
	p := newPipeline(t, func(c *config.Config) { c.DatabaseMaxConns = 2 })
	p.stage("EXT-1")
	// The caller's key and supplier come from the control-plane cache once
	// it listens for changes (until then, and on a miss, from the primary);
	// this read fills it.
	for deadline := time.Now().Add(10 * time.Second); !p.DB.ControlCacheLive(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the control-plane cache never went live")
		}
	}
	if st := p.status("EXT-1"); st["status"] != "UNKNOWN" {
		t.Fatalf("status before the pool is held: %v", st)
	}
	pool, err := p.DB.Gorm().DB()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		c, err := pool.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Close() }()
	}
	done := make(chan testutil.Response, 1)
	go func() {
		done <- p.As(p.token, http.MethodGet, "/v1/data-import/account-transfer-status/DEMO_ENERGY/EXT-1/", nil)
	}()
	select {
	case r := <-done:
		if r.Status != http.StatusOK || r.JSON()["status"] != "UNKNOWN" {
			t.Fatalf("status read while the write pool is held: %d %s", r.Status, r.Body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a status read waited for the write pool's connections")
	}
}

// Without DATABASE_READ_URL every read is the primary's: a status and a list
// read right after staging see it.
func TestNoReadReplicaReadsPrimary(t *testing.T) {
	p := newPipeline(t)
	if p.API.DB.ReadReplica() != nil {
		t.Fatal("a read replica without DATABASE_READ_URL")
	}
	p.stage("EXT-1")
	if r := p.As(p.token, http.MethodGet, "/v1/data-import/account-transfer-status/DEMO_ENERGY/EXT-1/", nil); r.Status != http.StatusOK {
		t.Fatalf("status right after staging: %d %s", r.Status, r.Body)
	}
	r := p.As(p.token, http.MethodGet, "/v1/data-import/pending-account-import-processes/DEMO_ENERGY/", nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"EXT-1"`) {
		t.Fatalf("pending list right after staging: %d %s", r.Status, r.Body)
	}
	if rd := p.Request(http.MethodGet, "/readyz", nil); strings.Contains(string(rd.Body), "postgres_replica") {
		t.Fatalf("readyz checks a replica that is not configured: %s", rd.Body)
	}
}
