package dataimport

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A Paused supplier holds its creations (CONTRACT §14): nothing of it starts
// creation until an operator sets it Ongoing again; Complete ends what has
// not started.

// EventHeld is the timeline event of a creation held because its supplier
// is Paused (v1 IN_PROGRESS, v2 PENDING). It is not published to partners:
// the account's status does not change.
const EventHeld = "EVENT_ACCOUNT_IMPORT_PROCESS_HELD"

// HeldSupplierPaused is a job's "held" while its supplier is Paused.
const HeldSupplierPaused = "supplier_paused"

// CodeSupplierMigrationComplete ends a creation that had not started when
// its supplier's migration was set Complete.
const CodeSupplierMigrationComplete = "import_supplier_migration_complete"

// SupplierCompleteError is the latest_error of a creation ended because its
// supplier's migration is Complete.
func SupplierCompleteError(code string) *Error {
	return &Error{Code: CodeSupplierMigrationComplete, Domain: DomainScheduling,
		Detail: fmt.Sprintf("The migration for import supplier %q was set Complete before this account's creation started; it will not be created.", code)}
}

// Brake pauses a supplier when more than FailureBP basis points (1/100 of
// a percent) of its last Window creation outcomes failed.
type Brake struct {
	FailureBP int `json:"failure_bp"`
	Window    int `json:"window"`
}

// Brake limits, as the database checks them.
const (
	BrakeMinWindow = 10
	BrakeMaxWindow = 100000
)

// ParseFailureRate reads a percentage such as "5%", "2.5%" or "5" as basis
// points (500, 250, 500); at most two decimal places, above 0 and below 100.
func ParseFailureRate(s string) (int, error) {
	t := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	whole, frac, _ := strings.Cut(t, ".")
	if whole == "" || len(frac) > 2 || strings.Trim(whole+frac, "0123456789") != "" {
		return 0, fmt.Errorf("failure rate %q: want a percentage such as 5%% or 2.5%%", s)
	}
	frac += strings.Repeat("0", 2-len(frac))
	n, err := strconv.Atoi(whole + frac)
	if err != nil || n <= 0 || n >= 10000 {
		return 0, fmt.Errorf("failure rate %q: want more than 0%% and less than 100%%", s)
	}
	return n, nil
}

// Validate checks the brake against the limits the database keeps.
func (b Brake) Validate() error {
	switch {
	case b.FailureBP <= 0 || b.FailureBP >= 10000:
		return fmt.Errorf("failure rate must be more than 0%% and less than 100%%")
	case b.Window < BrakeMinWindow || b.Window > BrakeMaxWindow:
		return fmt.Errorf("window must be %d to %d creation outcomes", BrakeMinWindow, BrakeMaxWindow)
	}
	return nil
}

// Rate is the brake's threshold as operators write it ("5%", "2.5%").
func (b Brake) Rate() string { return FormatBP(b.FailureBP) }

// FormatBP writes basis points as a percentage.
func FormatBP(bp int) string {
	s := strconv.Itoa(bp/100) + "." + fmt.Sprintf("%02d", bp%100)
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".") + "%"
}

// CreationOutcome is one creation attempt's end as the brake counts it.
type CreationOutcome struct {
	Failed bool
	Code   string // the failure's code ("" if it did not fail)
}

// BrakeTrip is what the brake measured when it tripped.
type BrakeTrip struct {
	FailureRate float64   // failed / window, 0..1
	Failed      int       // failures in the window
	Window      int       // outcomes looked at
	TopCodes    []TopCode // most frequent failure codes first (at most 5)
}

// Trips reports whether the last outcomes (newest first, at most Window)
// trip the brake: the window must be full, so a supplier's first failures
// do not pause it on their own.
func (b Brake) Trips(last []CreationOutcome) (BrakeTrip, bool) {
	if b.Window <= 0 || len(last) < b.Window {
		return BrakeTrip{}, false
	}
	last = last[:b.Window]
	counts := map[string]int{}
	failed := 0
	for _, o := range last {
		if o.Failed {
			failed++
			counts[o.Code]++
		}
	}
	// More than the threshold: failed/window > bp/10000.
	if failed*10000 <= b.FailureBP*b.Window {
		return BrakeTrip{}, false
	}
	top := make([]TopCode, 0, len(counts))
	for c, n := range counts {
		top = append(top, TopCode{Code: c, Count: int64(n)})
	}
	sort.Slice(top, func(i, j int) bool {
		if top[i].Count != top[j].Count {
			return top[i].Count > top[j].Count
		}
		return top[i].Code < top[j].Code
	})
	if len(top) > 5 {
		top = top[:5]
	}
	return BrakeTrip{FailureRate: float64(failed) / float64(b.Window), Failed: failed, Window: b.Window, TopCodes: top}, true
}

// Reason is the trip said in words, for the audit log, the console and the
// partner event.
func (t BrakeTrip) Reason(b Brake) string {
	codes := make([]string, len(t.TopCodes))
	for i, c := range t.TopCodes {
		codes[i] = fmt.Sprintf("%s ×%d", c.Code, c.Count)
	}
	return fmt.Sprintf("Error-rate brake: %d of the last %d creations failed (%s%%, brake at %s); top failure codes: %s.",
		t.Failed, t.Window, t.Percent(), b.Rate(), strings.Join(codes, ", "))
}

// Percent is the measured failure rate as a percentage with two decimals
// ("10.50"), exact from the counts.
func (t BrakeTrip) Percent() string {
	if t.Window <= 0 {
		return "0.00"
	}
	bp := (t.Failed*10000*2 + t.Window) / (2 * t.Window) // rounded to the nearest basis point
	return fmt.Sprintf("%d.%02d", bp/100, bp%100)
}

// PauseReason is why a supplier is Paused.
type PauseReason struct {
	Actor  string    `json:"actor"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
	// Set when the brake paused it.
	FailureRate *string   `json:"failure_rate,omitempty"` // percent, two decimals ("10.50")
	Window      *int      `json:"window,omitempty"`
	TopCodes    []TopCode `json:"top_codes,omitempty"`
}
