package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gridshift/dataimport/pkg/config"
	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/httpapi"
	"github.com/gridshift/dataimport/pkg/market"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// Replica heartbeats (table replicas): every process says every
// ReplicaHeartbeatEvery what it runs, how it is configured and what it
// holds; one not heard from for ReplicaTTL is taken for dead.
const (
	ReplicaHeartbeatEvery = 3 * time.Second
	ReplicaTTL            = 15 * time.Second
)

// replica is this process's entry in the replicas table and, for a worker,
// its view of the cluster: the payment vendors live API replicas accept
// that it cannot serve.
type replica struct {
	db   *postgres.DB
	log  *slog.Logger
	busy func() int // nil: the API holds no creation slots itself

	mu       sync.Mutex
	row      postgres.ReplicaRow
	unserved []string
}

func newReplica(db *postgres.DB, log *slog.Logger, role string, cfg config.Config, vendors []string) *replica {
	host, _ := os.Hostname()
	id := make([]byte, 12)
	_, _ = rand.Read(id)
	settings := replicaSettings(cfg, vendors)
	r := &replica{db: db, log: log, row: postgres.ReplicaRow{Instance: hex.EncodeToString(id), Role: role, Host: host,
		PID: os.Getpid(), Version: buildVersion(), Settings: settings, Fingerprint: settings.Fingerprint(),
		Ready: true, StartedAt: time.Now().UTC()}}
	log.Info(role+" configuration", "instance", r.row.Instance, "version", r.row.Version, "fingerprint", r.row.Fingerprint,
		"payment_vendors", settings.PaymentVendors, "markets", settings.Markets, "switches", settings.Switches)
	return r
}

// replicaSettings are the settings replicas must agree on: what a partner
// may name (payment vendors, markets) and the switches and leases that one
// replica's work relies on another's honouring.
func replicaSettings(cfg config.Config, vendors []string) dataimport.ReplicaSettings {
	return dataimport.ReplicaSettings{PaymentVendors: append([]string{}, vendors...), Markets: market.Names(),
		Switches: map[string]string{
			"WEBHOOK_ALLOW_PRIVATE": strconv.FormatBool(cfg.WebhookAllowPrivate),
			"SLOT_LEASE":            cfg.SlotLease.String(),
			"JOB_LEASE":             cfg.JobLease.String(),
			"IDEMPOTENCY_TTL":       cfg.IdempotencyTTL.String(),
		}}
}

// buildVersion is the VCS revision the binary was built from ("+dirty"
// with local changes), or "devel" when the build did not record one.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if dirty {
		rev += "+dirty"
	}
	return rev
}

// beat reads the cluster (a worker) and records this process's heartbeat.
func (r *replica) beat(ctx context.Context) {
	if r.row.Role == "worker" {
		live, err := r.db.LiveReplicas(ctx, ReplicaTTL)
		if err != nil {
			r.log.WarnContext(ctx, "replica list not read; readiness unchanged", "err", err.Error())
		} else {
			r.judge(ctx, live)
		}
	}
	r.mu.Lock()
	if r.busy != nil {
		r.row.Busy = r.busy()
	}
	row := r.row
	r.mu.Unlock()
	if err := r.db.Heartbeat(ctx, row); err != nil {
		r.log.WarnContext(ctx, "replica heartbeat not recorded", "err", err.Error())
	}
}

// judge sets the worker's readiness from the live API replicas' vendors.
func (r *replica) judge(ctx context.Context, live []postgres.ReplicaRow) {
	rs := make([]dataimport.Replica, len(live))
	for i, l := range live {
		rs[i] = l.Replica()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	unserved := dataimport.UnservedVendors(r.row.Settings.PaymentVendors, rs)
	if strings.Join(unserved, ",") != strings.Join(r.unserved, ",") {
		if len(unserved) > 0 {
			r.log.ErrorContext(ctx, "not ready: the API accepts payment vendors this worker cannot serve (their settings are missing here)",
				"unserved_vendors", unserved, "payment_vendors", r.row.Settings.PaymentVendors)
		} else {
			r.log.InfoContext(ctx, "ready: this worker serves every payment vendor the API accepts")
		}
	}
	r.unserved = unserved
	r.row.Ready, r.row.Reason = len(unserved) == 0, nil
	if !r.row.Ready {
		reason := r.reasonLocked()
		r.row.Reason = &reason
	}
}

func (r *replica) reasonLocked() string {
	return "the API accepts payment vendor " + strings.Join(r.unserved, ", ") +
		" but this worker is not configured for it (its settings, e.g. STRIPE_API_KEY, are missing here); accounts naming it wait for another worker"
}

// Unserved are the vendors of the last judgement this worker cannot serve.
func (r *replica) Unserved() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unserved
}

// Ping is the worker's readiness check "payment_vendors".
func (r *replica) Ping(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.unserved) == 0 {
		return nil
	}
	return &httpapi.NotReady{Reason: r.reasonLocked()}
}

// run beats until ctx ends, then deletes the row (a clean shutdown), so the
// console stops listing the process at once rather than after ReplicaTTL.
func (r *replica) run(ctx context.Context) {
	t := time.NewTicker(ReplicaHeartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			if err := r.db.ForgetReplica(fctx, r.row.Instance); err != nil {
				r.log.Warn("replica row not deleted; it expires", "err", err.Error())
			}
			return
		case <-t.C:
			r.beat(ctx)
		}
	}
}
