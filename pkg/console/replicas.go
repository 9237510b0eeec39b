package console

import (
	"context"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/postgres"
)

// ReplicaList reads the live API and worker processes (their heartbeats).
type ReplicaList func(ctx context.Context) ([]postgres.ReplicaRow, error)

// ReplicaView is one process of the overview's replica table.
type ReplicaView struct {
	postgres.ReplicaRow
	// Differs says how the process's version or settings differ from the
	// other replicas' (empty when it agrees with them).
	Differs []string
}

// ShortFingerprint is enough of the fingerprint to tell replicas apart.
func (r ReplicaView) ShortFingerprint() string {
	const n = len("sha256:") + 12
	if len(r.Fingerprint) > n {
		return r.Fingerprint[:n]
	}
	return r.Fingerprint
}

// ReplicaSection is the overview's processes: one row per API or worker
// process (not per asynq server: a worker runs two), flagged when it
// differs from the others.
type ReplicaSection struct {
	Replicas     []ReplicaView
	APIs         int
	WorkerProcs  int
	Busy         int // creation slots the workers hold, summed
	Mismatched   int
	ReplicasOff  bool
	ReplicaError string
}

func (c *Console) loadReplicas(ctx context.Context) ReplicaSection {
	var s ReplicaSection
	if c.deps.Replicas == nil {
		s.ReplicasOff = true
		return s
	}
	rows, err := c.deps.Replicas(ctx)
	if err != nil {
		// The rest of the overview is still worth showing.
		s.ReplicaError = err.Error()
		return s
	}
	rs := make([]dataimport.Replica, len(rows))
	for i, r := range rows {
		rs[i] = r.Replica()
	}
	diffs := dataimport.ReplicaDifferences(rs)
	for _, r := range rows {
		v := ReplicaView{ReplicaRow: r, Differs: diffs[r.Instance]}
		s.Replicas = append(s.Replicas, v)
		switch r.Role {
		case "api":
			s.APIs++
		case "worker":
			s.WorkerProcs++
		}
		s.Busy += r.Busy
		if len(v.Differs) > 0 || !r.Ready {
			s.Mismatched++
		}
	}
	return s
}

// SeenAgo is how long ago the last heartbeat was.
func (r ReplicaView) SeenAgo() string {
	return time.Since(r.SeenAt).Round(time.Second).String() + " ago"
}
