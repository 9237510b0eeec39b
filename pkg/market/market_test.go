package market_test

import (
	"slices"
	"testing"

	"github.com/gridshift/dataimport/pkg/market"
)

func TestRegistry(t *testing.T) {
	t.Parallel()
	for _, none := range []string{"", "NONE"} {
		if m, err := market.For(none); m != nil || err != nil {
			t.Errorf("For(%q) = %v, %v; want the generic rules (nil)", none, m, err)
		}
	}
	if m, err := market.For("GB"); err != nil || m == nil || m.Name() != "GB" {
		t.Errorf("For(GB) = %v, %v", m, err)
	}
	if _, err := market.For("gb"); err == nil {
		t.Error("settings are stored upper-case; lower-case is not a market")
	}
	if _, err := market.For("FR"); err == nil {
		t.Error("an unregistered market was accepted")
	}
	if names := market.Names(); !slices.Equal(names, []string{"NONE", "GB"}) {
		t.Errorf("Names() = %v", names)
	}
}
