package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// ReplicaRow is one process's heartbeat (table replicas, migration 00027).
type ReplicaRow struct {
	Instance    string
	Role        string
	Host        string
	PID         int
	Version     string
	Fingerprint string
	Settings    dataimport.ReplicaSettings
	Busy        int
	Ready       bool
	Reason      *string
	StartedAt   time.Time
	SeenAt      time.Time
}

// Replica is the domain view of the row, for dataimport's comparisons.
func (r ReplicaRow) Replica() dataimport.Replica {
	return dataimport.Replica{Instance: r.Instance, Role: r.Role, Version: r.Version, Settings: r.Settings}
}

// Heartbeat records that the process is alive, with what it runs and holds
// now; seen_at is the database's clock, so replicas' clocks need not agree.
func (db *DB) Heartbeat(ctx context.Context, r ReplicaRow) error {
	settings, err := json.Marshal(r.Settings)
	if err != nil {
		return fmt.Errorf("heartbeat %s: %w", r.Instance, err)
	}
	if err := db.gorm.WithContext(ctx).Exec(`
		INSERT INTO replicas (instance, role, host, pid, version, fingerprint, settings, busy, ready, reason, started_at, seen_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now())
		ON CONFLICT (instance) DO UPDATE SET fingerprint = excluded.fingerprint, settings = excluded.settings,
		       busy = excluded.busy, ready = excluded.ready, reason = excluded.reason, seen_at = now()`,
		r.Instance, r.Role, r.Host, r.PID, r.Version, r.Fingerprint, string(settings), max(r.Busy, 0), r.Ready, r.Reason, r.StartedAt).Error; err != nil {
		return fmt.Errorf("heartbeat %s: %w", r.Instance, err)
	}
	return nil
}

// ForgetReplica deletes the process's row (a clean shutdown).
func (db *DB) ForgetReplica(ctx context.Context, instance string) error {
	if err := db.gorm.WithContext(ctx).Exec(`DELETE FROM replicas WHERE instance = ?`, instance).Error; err != nil {
		return fmt.Errorf("forget replica %s: %w", instance, err)
	}
	return nil
}

// LiveReplicas lists the processes seen within ttl, API first, oldest
// first. Rows of processes gone for ten times longer (killed, so never
// deleted) are swept on the way, so the table stays as small as the cluster.
func (db *DB) LiveReplicas(ctx context.Context, ttl time.Duration) ([]ReplicaRow, error) {
	g := db.gorm.WithContext(ctx)
	if err := g.Exec(`DELETE FROM replicas WHERE seen_at < now() - make_interval(secs => ?)`, (10 * ttl).Seconds()).Error; err != nil {
		return nil, fmt.Errorf("sweep replicas: %w", err)
	}
	var rows []struct {
		Instance, Role, Host, Version, Fingerprint string
		PID                                        int `gorm:"column:pid"`
		Settings                                   []byte
		Busy                                       int
		Ready                                      bool
		Reason                                     *string
		StartedAt, SeenAt                          time.Time
	}
	if err := g.Raw(`SELECT instance, role, host, pid, version, fingerprint, settings, busy, ready, reason, started_at, seen_at
		  FROM replicas WHERE seen_at >= now() - make_interval(secs => ?) ORDER BY role, started_at, instance`, ttl.Seconds()).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("live replicas: %w", err)
	}
	out := make([]ReplicaRow, len(rows))
	for i, r := range rows {
		out[i] = ReplicaRow{Instance: r.Instance, Role: r.Role, Host: r.Host, PID: r.PID, Version: r.Version, Fingerprint: r.Fingerprint,
			Busy: r.Busy, Ready: r.Ready, Reason: r.Reason, StartedAt: r.StartedAt, SeenAt: r.SeenAt}
		if err := json.Unmarshal(r.Settings, &out[i].Settings); err != nil {
			return nil, fmt.Errorf("replica %s settings: %w", r.Instance, err)
		}
	}
	return out, nil
}
