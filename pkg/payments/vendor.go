// Package payments is the vendor side of payment instructions (CONTRACT §7):
// the interface every payment vendor adapter implements, its typed errors,
// the registry of configured vendors, and Resilient, which gives any adapter
// the interface's retry and circuit-breaker semantics. Adapters (such as
// payments/stripevendor) do the I/O; this package does none.
package payments

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// Vendor verifies that an instruction exists at the vendor and returns its
// details. One call is one attempt: retries belong to Resilient. Failures
// are *Error values (see Kind); anything else is an unexpected error.
type Vendor interface {
	Verify(ctx context.Context, typ dataimport.PaymentInstructionType, reference string) (dataimport.PaymentDetails, error)
}

// Kind classifies a vendor failure by what the caller should do about it.
type Kind int

const (
	// KindNotFound: the vendor says the reference does not exist. Final.
	KindNotFound Kind = iota + 1
	// KindRejected: the vendor answered, but the reference is not usable as
	// asked (not a card, an inactive mandate, a request it refuses). Final.
	KindRejected
	// KindTransient: timeout, connection failure, 429 or 5xx. Worth retrying.
	KindTransient
	// KindPersistent: the vendor is unusable for now whatever we send:
	// credentials refused, circuit breaker open. Final for this request.
	KindPersistent
)

func (k Kind) String() string {
	switch k {
	case KindNotFound:
		return "not found"
	case KindRejected:
		return "rejected"
	case KindTransient:
		return "transient"
	case KindPersistent:
		return "persistent"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Error is a classified vendor failure. Reason is safe to show to partners
// (it never carries vendor messages, which may echo our credentials); Err is
// the underlying cause, for logs.
type Error struct {
	Kind   Kind
	Reason string
	Err    error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("payment vendor (%s): %s Cause: %v", e.Kind, e.Reason, e.Err)
	}
	return fmt.Sprintf("payment vendor (%s): %s", e.Kind, e.Reason)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds a classified error with a formatted reason.
func Errorf(kind Kind, cause error, format string, args ...any) *Error {
	return &Error{Kind: kind, Reason: fmt.Sprintf(format, args...), Err: cause}
}

// KindOf returns the Kind of err, or 0 for an unclassified error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}

// Registry maps configured vendor names (as partners send them, e.g.
// "STRIPE") to adapters. Adding a vendor is one adapter file plus one
// Register call in the wiring.
type Registry struct {
	mu      sync.RWMutex
	vendors map[string]Vendor
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{vendors: map[string]Vendor{}} }

// Register adds a vendor; registering a name twice is a wiring bug.
func (r *Registry) Register(name string, v Vendor) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.vendors[name]; dup {
		panic("payments: vendor " + name + " registered twice")
	}
	r.vendors[name] = v
}

// Vendor returns the adapter registered under name.
func (r *Registry) Vendor(name string) (Vendor, bool) {
	if r == nil {
		return nil, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := r.vendors[name]
	return v, ok
}

// Names lists the configured vendors, sorted.
func (r *Registry) Names() []string {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.vendors))
	for n := range r.vendors {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Refusal is what partners are told about a final vendor failure, by the
// post-import endpoint and by account creation alike: the reference is not
// at the vendor (payment_instruction_not_found_at_vendor), not usable as
// asked (payment_instruction_rejected_by_vendor), or the vendor cannot be
// used now (payment_vendor_unavailable, with the vendor's safe reason as
// error_detail). It is nil for a transient or unclassified failure, which
// is worth retrying as is.
func Refusal(err error) *dataimport.Error {
	var e *Error
	if !errors.As(err, &e) {
		return nil
	}
	switch e.Kind {
	case KindNotFound:
		return dataimport.Errorf(dataimport.CodePaymentInstructionNotFound, "%s", e.Reason)
	case KindRejected:
		return dataimport.Errorf(dataimport.CodePaymentInstructionRejected, "%s", e.Reason)
	case KindPersistent:
		return &dataimport.Error{Code: dataimport.CodePaymentVendorUnavailable,
			Detail: "The payment vendor cannot be used at the moment. Do not retry this request unchanged.",
			Extra:  map[string]any{"error_detail": e.Reason}}
	}
	return nil
}

// Lookup finds configured vendors by name (*Registry).
type Lookup interface {
	Vendor(name string) (Vendor, bool)
	Names() []string
}

// VerifyInstruction asks pi's vendor about it and returns pi with the
// vendor's details. It is read-only at the vendor, so safe to repeat (a
// retried job, a dry run). Call it with no database transaction open.
func VerifyInstruction(ctx context.Context, vendors Lookup, pi dataimport.PaymentInstruction) (dataimport.PaymentInstruction, error) {
	var v Vendor
	ok := false
	if vendors != nil {
		v, ok = vendors.Vendor(pi.Vendor)
	}
	if !ok {
		// Validation accepts only configured names.
		return pi, fmt.Errorf("payment vendor %s is not configured", pi.Vendor)
	}
	d, err := v.Verify(ctx, pi.Type, pi.Reference)
	if err != nil {
		return pi, fmt.Errorf("verify %s %s: %w", pi.Vendor, pi.Reference, err)
	}
	pi.Details = d
	return pi, nil
}
