package queue

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultFairWindow is how long a supplier counts as having work after its
// latest capped acquire (a refused one too): longer than a partner's
// Retry-After on a 429, so a supplier whose creates are being refused still
// counts while it waits to retry.
const DefaultFairWindow = 5 * time.Second

// Owner is whose work a slot is: the supplier and organisation (ids; 0 for
// none) whose caps count it.
type Owner struct {
	Supplier     int64
	Organisation int64
}

// tags are the owner as the scripts count it: "s:<id> o:<id>".
func (o Owner) tags() string {
	var b []string
	if o.Supplier != 0 {
		b = append(b, "s:"+strconv.FormatInt(o.Supplier, 10))
	}
	if o.Organisation != 0 {
		b = append(b, "o:"+strconv.FormatInt(o.Organisation, 10))
	}
	return strings.Join(b, " ")
}

// Caps are the caps one acquire is under; a cap <= 0 is none.
type Caps struct {
	Global       int // cluster-wide
	Supplier     int // the owner's supplier's
	Organisation int // the owner's organisation's
}

// Held is a holder with its owner (what a recount takes again).
type Held struct {
	Holder string
	Owner  Owner
}

// Counts are the live slots per supplier and per organisation (ids).
type Counts struct {
	Suppliers     map[int64]int
	Organisations map[int64]int
}

// WithFairWindow sets how long a supplier counts as having work after an
// acquire (see DefaultFairWindow); d <= 0 turns fair shares off. It
// returns s.
func (s *Semaphore) WithFairWindow(d time.Duration) *Semaphore {
	s.fairMS = max(d.Milliseconds(), 0)
	return s
}

// Counts reads the live slots per supplier and organisation, purging
// expired leases first (for the console, metrics and tests).
func (s *Semaphore) Counts(ctx context.Context) (Counts, error) {
	kv, err := countsScript.Run(ctx, s.c, s.keys()).StringSlice()
	if err != nil {
		return Counts{}, fmt.Errorf("semaphore counts: %w", err)
	}
	out := Counts{Suppliers: map[int64]int{}, Organisations: map[int64]int{}}
	for i := 0; i+1 < len(kv); i += 2 {
		n, err := strconv.Atoi(kv[i+1])
		if err != nil {
			return Counts{}, fmt.Errorf("semaphore count %s=%q: %w", kv[i], kv[i+1], err)
		}
		kind, id, _ := strings.Cut(kv[i], ":")
		v, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			continue
		}
		switch kind {
		case "s":
			out.Suppliers[v] = n
		case "o":
			out.Organisations[v] = n
		}
	}
	return out, nil
}
