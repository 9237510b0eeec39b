package dataimport

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// ReplicaSettings are the settings every API and worker replica must agree
// on (CONTRACT §14, replica hygiene): a partner's request is accepted by one
// replica and carried out by another, so a payment vendor, a market or a
// switch that one of them lacks fails accounts that another accepted.
type ReplicaSettings struct {
	PaymentVendors []string          `json:"payment_vendors"`
	Markets        []string          `json:"markets"`
	Switches       map[string]string `json:"switches"` // environment variable name → its effective value
}

// canonical sorts the lists so that the same settings always hash alike.
func (s ReplicaSettings) canonical() ReplicaSettings {
	c := ReplicaSettings{PaymentVendors: slices.Sorted(slices.Values(s.PaymentVendors)),
		Markets: slices.Sorted(slices.Values(s.Markets)), Switches: s.Switches}
	if c.PaymentVendors == nil {
		c.PaymentVendors = []string{}
	}
	if c.Markets == nil {
		c.Markets = []string{}
	}
	if c.Switches == nil {
		c.Switches = map[string]string{}
	}
	return c
}

// JSON is the canonical JSON of the settings (sorted lists; encoding/json
// sorts map keys).
func (s ReplicaSettings) JSON() []byte {
	raw, err := json.Marshal(s.canonical())
	if err != nil { // strings only: cannot happen
		panic(err)
	}
	return raw
}

// Fingerprint is "sha256:" + hex of the canonical JSON: equal for replicas
// that agree.
func (s ReplicaSettings) Fingerprint() string {
	sum := sha256.Sum256(s.JSON())
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Replica is one live process as the hygiene check sees it.
type Replica struct {
	Instance string
	Role     string // "api" or "worker"
	Version  string
	Settings ReplicaSettings
}

// ReplicaDifferences names, per instance, how a replica differs from the
// others: its version or a setting that is not the one most replicas have
// (on a tie nobody is the reference, so every replica of a tied value is
// flagged). Replicas that agree get no entry.
func ReplicaDifferences(rs []Replica) map[string][]string {
	out := map[string][]string{}
	add := func(key func(Replica) string, describe func(mine, ref Replica) string) {
		counts := map[string]int{}
		for _, r := range rs {
			counts[key(r)]++
		}
		if len(counts) < 2 {
			return
		}
		best, bestN, tie := "", -1, false
		for k, n := range counts {
			switch {
			case n > bestN:
				best, bestN, tie = k, n, false
			case n == bestN:
				tie = true
			}
		}
		// Compared with the most common value, or on a tie with any other.
		refFor := func(mine string) Replica {
			for _, r := range rs {
				if k := key(r); k != mine && (tie || k == best) {
					return r
				}
			}
			return Replica{}
		}
		for _, r := range rs {
			if key(r) != best || tie {
				out[r.Instance] = append(out[r.Instance], describe(r, refFor(key(r))))
			}
		}
	}
	add(func(r Replica) string { return r.Version }, func(mine, ref Replica) string {
		return fmt.Sprintf("version %s (others: %s)", mine.Version, ref.Version)
	})
	add(func(r Replica) string {
		return strings.Join(slices.Sorted(slices.Values(r.Settings.PaymentVendors)), ",")
	},
		func(mine, ref Replica) string {
			return "payment vendors: " + listDifference(mine.Settings.PaymentVendors, ref.Settings.PaymentVendors)
		})
	add(func(r Replica) string { return strings.Join(slices.Sorted(slices.Values(r.Settings.Markets)), ",") },
		func(mine, ref Replica) string {
			return "markets: " + listDifference(mine.Settings.Markets, ref.Settings.Markets)
		})
	names := map[string]bool{}
	for _, r := range rs {
		for k := range r.Settings.Switches {
			names[k] = true
		}
	}
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		add(func(r Replica) string { return r.Settings.Switches[k] }, func(mine, ref Replica) string {
			return fmt.Sprintf("%s=%s (others: %s)", k, mine.Settings.Switches[k], ref.Settings.Switches[k])
		})
	}
	return out
}

// listDifference says what mine lacks and has beyond ref.
func listDifference(mine, ref []string) string {
	var parts []string
	if missing := without(ref, mine); len(missing) > 0 {
		parts = append(parts, "missing "+strings.Join(missing, ", "))
	}
	if extra := without(mine, ref); len(extra) > 0 {
		parts = append(parts, "extra "+strings.Join(extra, ", "))
	}
	if len(parts) == 0 { // a tie between equal-looking lists cannot happen; be safe
		return strings.Join(mine, ", ")
	}
	return strings.Join(parts, "; ")
}

// without is a minus b, sorted.
func without(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}

// UnservedVendors are the payment vendors some live API replica accepts
// that a worker configured with mine cannot serve: accounts naming them
// would fail on that worker although they were accepted.
func UnservedVendors(mine []string, live []Replica) []string {
	var accepted []string
	for _, r := range live {
		if r.Role == "api" {
			accepted = append(accepted, r.Settings.PaymentVendors...)
		}
	}
	return without(accepted, mine)
}
