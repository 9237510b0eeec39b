// Package market is the one place market rule sets are registered
// (CONTRACT §10). A supplier's --market setting names one; NONE keeps the
// generic rules of pkg/dataimport. Adding a market is one new package that
// implements dataimport.Market and one line in registry.
package market

import (
	"fmt"
	"slices"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/market/gb"
)

// None is the setting for the generic rules.
const None = "NONE"

var registry = map[string]dataimport.Market{
	gb.Name: gb.Market{},
}

// For returns the rule set a supplier's market setting names: nil for NONE
// (or an empty setting, as rows written before markets existed read).
func For(name string) (dataimport.Market, error) {
	if name == "" || name == None {
		return nil, nil
	}
	m, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("market %q: use one of %v", name, Names())
	}
	return m, nil
}

// Names lists every valid setting, NONE first.
func Names() []string {
	out := []string{None}
	for n := range registry {
		out = append(out, n)
	}
	slices.Sort(out[1:])
	return out
}
