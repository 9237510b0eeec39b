package dataimport

import (
	"errors"
	"testing"
)

// DecodeAccountFor is the one entry point of the server and of migrator
// convert --validate: the catalogue rules run after the others, and only
// on an account that passed them (so both answer the same codes); a
// catalogue that cannot be read is an error, not a verdict.
func TestDecodeAccountForRunsTheCatalogueLast(t *testing.T) {
	calls := 0
	empty := func(_, _ []string) (Catalogue, error) {
		calls++
		return Catalogue{}, nil
	}
	rules := func(cat CatalogueFunc) func(*Account) (AccountRules, error) {
		return func(*Account) (AccountRules, error) { return AccountRules{PhoneRegion: "GB", Catalogue: cat}, nil }
	}
	body := validAccountJSON(t)

	// Valid otherwise: every agreement's product is unknown to an empty catalogue.
	_, err := DecodeAccountFor(body, rules(empty))
	e, ok := AsError(err)
	if !ok || e.Code != CodeAccountFailedValidation || len(e.Errors) == 0 || calls != 1 {
		t.Fatalf("unknown products: %v (%d calls)", err, calls)
	}
	for _, fe := range e.Errors {
		if fe.Code != CodeProductNotFound && fe.Code != CodeTariffCodeNotFound {
			t.Errorf("unexpected %s %s", fe.Attr, fe.Code)
		}
	}

	// A pure rule failing: the catalogue is not consulted.
	m := generic(t, body)
	set(t, m, "customers.0.mobile", "12")
	calls = 0
	if _, err := DecodeAccountFor(encode(t, m), rules(empty)); err == nil || calls != 0 {
		t.Fatalf("bad phone: %v (%d catalogue calls)", err, calls)
	}

	// No catalogue (supplier without require-products): valid.
	if _, err := DecodeAccountFor(body, rules(nil)); err != nil {
		t.Fatalf("no catalogue: %v", err)
	}

	// The catalogue failing to load is the caller's error.
	down := errors.New("down")
	if _, err := DecodeAccountFor(body, rules(func(_, _ []string) (Catalogue, error) { return Catalogue{}, down })); !errors.Is(err, down) {
		t.Fatalf("catalogue down: %v", err)
	}
}
