package testutil

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/gridshift/dataimport/pkg/config"
)

// Sentinel is a private `redis-server --sentinel` monitoring a private
// redis-server (Master) under the name MasterName.
type Sentinel struct {
	*Redis            // the sentinel process; Addr is what REDIS_SENTINEL_ADDRS lists
	Master     *Redis // the data node it monitors
	MasterName string
}

// NewSentinel starts a private redis-server and one sentinel monitoring it
// (quorum 1), both stopped when tb ends.
func NewSentinel(tb testing.TB, masterName string) *Sentinel {
	tb.Helper()
	master := NewRedis(tb)
	dir := tb.TempDir()
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	// Sentinel rewrites its config file, so it gets its own writable copy.
	conf := filepath.Join(dir, "sentinel.conf")
	host, mport, _ := strings.Cut(master.Addr, ":")
	text := fmt.Sprintf("sentinel monitor %s %s %s 1\nsentinel down-after-milliseconds %s 1000\n", masterName, host, mport, masterName)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		tb.Fatal(err)
	}
	s := &Redis{dir: dir, port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), conf: conf, extra: []string{"--sentinel"}}
	s.URL = "redis://" + s.Addr
	if err := s.Start(); err != nil {
		tb.Fatalf("private sentinel: %v", err)
	}
	tb.Cleanup(s.Stop)
	c := goredis.NewSentinelClient(&goredis.Options{Addr: s.Addr})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if addr, err := c.GetMasterAddrByName(ctx, masterName).Result(); err != nil || len(addr) != 2 || addr[1] != mport {
		tb.Fatalf("sentinel does not report master %s at %s: %v %v", masterName, master.Addr, addr, err)
	}
	return &Sentinel{Redis: s, Master: master, MasterName: masterName}
}

// Use is a StackOption pointing the API (and StartWorker) at the sentinel
// instead of REDIS_URL.
func (s *Sentinel) Use(c *config.Config) {
	c.RedisURL = ""
	c.RedisSentinelAddrs, c.RedisSentinelMaster = []string{s.Addr}, s.MasterName
}

// RedisCluster is a private Redis Cluster of masters without replicas.
type RedisCluster struct {
	Nodes []*Redis
	Addrs []string
}

// NewRedisCluster starts n redis-servers in cluster mode, gives each an even
// share of the 16384 slots and joins them; it returns once every node sees
// the cluster state ok (about two seconds: the nodes learn each other's slots
// through gossip). Stopped when tb ends.
func NewRedisCluster(tb testing.TB, n int) *RedisCluster {
	tb.Helper()
	rc := &RedisCluster{}
	for range n {
		dir := tb.TempDir()
		port, err := freePort()
		if err != nil {
			tb.Fatal(err)
		}
		r := &Redis{dir: dir, port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), extra: []string{
			"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-node-timeout", "5000"}}
		r.URL = "redis://" + r.Addr + "/0"
		if err := r.Start(); err != nil {
			tb.Fatalf("private cluster node: %v", err)
		}
		tb.Cleanup(r.Stop)
		rc.Nodes, rc.Addrs = append(rc.Nodes, r), append(rc.Addrs, r.Addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	clients := make([]*goredis.Client, n)
	for i, r := range rc.Nodes {
		clients[i] = goredis.NewClient(&goredis.Options{Addr: r.Addr})
		defer clients[i].Close()
		lo, hi := i*16384/n, (i+1)*16384/n-1
		if err := clients[i].Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			tb.Fatalf("cluster addslotsrange on %s: %v", r.Addr, err)
		}
	}
	for _, r := range rc.Nodes[1:] {
		host, port, _ := strings.Cut(r.Addr, ":")
		if err := clients[0].ClusterMeet(ctx, host, port).Err(); err != nil {
			tb.Fatalf("cluster meet %s: %v", r.Addr, err)
		}
	}
	for _, c := range clients {
		for {
			info, err := c.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if ctx.Err() != nil {
				tb.Fatalf("cluster did not form: %v %s", err, info)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return rc
}

// Use is a StackOption pointing the API (and StartWorker) at the cluster
// instead of REDIS_URL.
func (rc *RedisCluster) Use(c *config.Config) {
	c.RedisURL = ""
	c.RedisClusterAddrs = rc.Addrs
}
