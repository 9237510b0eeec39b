package config_test

import (
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/config"
)

func TestRedisTopology(t *testing.T) {
	redisVars := []string{"REDIS_URL", "REDIS_SENTINEL_ADDRS", "REDIS_SENTINEL_MASTER", "REDIS_SENTINEL_PASSWORD",
		"REDIS_CLUSTER_ADDRS", "REDIS_PASSWORD"}
	cases := []struct {
		name    string
		env     map[string]string
		want    string // topology, or "" when Load must fail
		wantErr string
		check   func(t *testing.T, c config.Config)
	}{
		{name: "default", want: config.RedisSingle, check: func(t *testing.T, c config.Config) {
			if c.RedisURL != "redis://127.0.0.1:6379/0" {
				t.Errorf("REDIS_URL default %q", c.RedisURL)
			}
		}},
		{name: "url", env: map[string]string{"REDIS_URL": "redis://r:6379/1"}, want: config.RedisSingle},
		{name: "sentinel", env: map[string]string{"REDIS_SENTINEL_ADDRS": "s1:26379, s2:26379,,s3:26379",
			"REDIS_SENTINEL_MASTER": "mymaster", "REDIS_SENTINEL_PASSWORD": "sp", "REDIS_PASSWORD": "p"},
			want: config.RedisSentinel, check: func(t *testing.T, c config.Config) {
				if !slices.Equal(c.RedisSentinelAddrs, []string{"s1:26379", "s2:26379", "s3:26379"}) ||
					c.RedisSentinelMaster != "mymaster" || c.RedisSentinelPassword != "sp" || c.RedisPassword != "p" {
					t.Errorf("sentinel config %+v", c)
				}
			}},
		{name: "sentinel with empty REDIS_URL", env: map[string]string{"REDIS_URL": "",
			"REDIS_SENTINEL_ADDRS": "s1:26379", "REDIS_SENTINEL_MASTER": "m"}, want: config.RedisSentinel},
		{name: "cluster", env: map[string]string{"REDIS_CLUSTER_ADDRS": "n1:6379,n2:6379,n3:6379"}, want: config.RedisCluster,
			check: func(t *testing.T, c config.Config) {
				if len(c.RedisClusterAddrs) != 3 {
					t.Errorf("cluster addrs %v", c.RedisClusterAddrs)
				}
			}},
		{name: "url and sentinel", env: map[string]string{"REDIS_URL": "redis://r:6379/0",
			"REDIS_SENTINEL_ADDRS": "s1:26379", "REDIS_SENTINEL_MASTER": "m"}, wantErr: "REDIS_URL and REDIS_SENTINEL_ADDRS are set"},
		{name: "url and cluster", env: map[string]string{"REDIS_URL": "redis://r:6379/0", "REDIS_CLUSTER_ADDRS": "n1:6379"},
			wantErr: "exactly one Redis topology"},
		{name: "sentinel and cluster", env: map[string]string{"REDIS_SENTINEL_ADDRS": "s1:26379", "REDIS_SENTINEL_MASTER": "m",
			"REDIS_CLUSTER_ADDRS": "n1:6379"}, wantErr: "REDIS_SENTINEL_ADDRS and REDIS_CLUSTER_ADDRS"},
		{name: "sentinel without master", env: map[string]string{"REDIS_SENTINEL_ADDRS": "s1:26379"}, wantErr: "REDIS_SENTINEL_MASTER"},
		{name: "master without sentinels", env: map[string]string{"REDIS_SENTINEL_MASTER": "m"}, wantErr: "go together"},
		{name: "sentinel password alone", env: map[string]string{"REDIS_SENTINEL_PASSWORD": "x"}, wantErr: "without REDIS_SENTINEL_ADDRS"},
		{name: "password with url", env: map[string]string{"REDIS_PASSWORD": "x"}, wantErr: "put the password in the URL"},
		{name: "address without port", env: map[string]string{"REDIS_CLUSTER_ADDRS": "n1:6379,n2"}, wantErr: `"n2": want host:port`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range redisVars {
				t.Setenv(k, "") // clear the environment the test runs in
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			c, err := config.Load()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.RedisTopology(); got != tc.want {
				t.Fatalf("topology %q, want %q", got, tc.want)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}

func TestDatabaseReadURL(t *testing.T) {
	t.Setenv("DATABASE_READ_URL", "")
	c, err := config.Load()
	if err != nil || c.DatabaseReadURL != "" {
		t.Fatalf("unset: %q %v", c.DatabaseReadURL, err)
	}
	t.Setenv("DATABASE_READ_URL", "postgres://ro@replica:5432/dataimport")
	if c, err = config.Load(); err != nil || c.DatabaseReadURL != "postgres://ro@replica:5432/dataimport" {
		t.Fatalf("set: %q %v", c.DatabaseReadURL, err)
	}
}

func TestDatabaseMaxConns(t *testing.T) {
	t.Setenv("DATABASE_MAX_CONNS", "")
	c, err := config.Load()
	if err != nil || c.DatabaseMaxConns != 4*runtime.NumCPU() {
		t.Fatalf("unset: %d %v, want %d", c.DatabaseMaxConns, err, 4*runtime.NumCPU())
	}
	t.Setenv("DATABASE_MAX_CONNS", "12")
	if c, err = config.Load(); err != nil || c.DatabaseMaxConns != 12 {
		t.Fatalf("set: %d %v", c.DatabaseMaxConns, err)
	}
}

func TestWorkerDBWriters(t *testing.T) {
	t.Setenv("WORKER_DB_WRITERS", "")
	c, err := config.Load()
	if err != nil || c.WorkerDBWriters != runtime.NumCPU() {
		t.Fatalf("unset: %d %v, want %d", c.WorkerDBWriters, err, runtime.NumCPU())
	}
	t.Setenv("WORKER_DB_WRITERS", "6")
	if c, err = config.Load(); err != nil || c.WorkerDBWriters != 6 {
		t.Fatalf("set: %d %v", c.WorkerDBWriters, err)
	}
}

func TestIdempotencyTTL(t *testing.T) {
	t.Setenv("IDEMPOTENCY_TTL", "")
	c, err := config.Load()
	if err != nil || c.IdempotencyTTL != 24*time.Hour {
		t.Fatalf("unset: %v %v, want 24h", c.IdempotencyTTL, err)
	}
	t.Setenv("IDEMPOTENCY_TTL", "90m")
	if c, err = config.Load(); err != nil || c.IdempotencyTTL != 90*time.Minute {
		t.Fatalf("set: %v %v", c.IdempotencyTTL, err)
	}
	for _, bad := range []string{"0s", "-1h", "a day"} {
		t.Setenv("IDEMPOTENCY_TTL", bad)
		if _, err := config.Load(); err == nil || !strings.Contains(strings.ToUpper(err.Error()), "IDEMPOTENCY") {
			t.Errorf("IDEMPOTENCY_TTL=%q: err %v, want one naming it", bad, err)
		}
	}
}

// TestUploadSettings: the upload bounds have their defaults, and a value
// that would turn a bound off (zero, negative, out of range) is refused.
func TestUploadSettings(t *testing.T) {
	c, err := config.Load()
	if err != nil {
		t.Fatal(err)
	}
	if c.UploadIdleTimeout != 30*time.Second || c.MaxUploadsPerOrg != 4 || c.MaxUploadsPerReplica != 16 || c.UploadLostAfter != time.Hour ||
		c.MaxJobLines != 5_000_000 || c.JobInvalidCheckAfter != 1000 || c.MaxJobInvalidRatio != 0.5 || c.MaxGzipRatio != 500 {
		t.Fatalf("upload defaults: %+v", c)
	}
	for name, value := range map[string]string{
		"UPLOAD_IDLE_TIMEOUT": "0s", "MAX_UPLOADS_PER_ORG": "0", "MAX_UPLOADS_PER_REPLICA": "-1", "UPLOAD_LOST_AFTER": "5s",
		"MAX_JOB_LINES": "0", "JOB_INVALID_CHECK_AFTER": "0", "MAX_JOB_INVALID_RATIO": "1.5", "MAX_GZIP_RATIO": "1",
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, value)
			if _, err := config.Load(); err == nil || !strings.Contains(err.Error(), name) {
				t.Fatalf("%s=%s: %v", name, value, err)
			}
		})
	}
}
