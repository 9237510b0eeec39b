package postgres

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// The figures kept for a compacted account are those reconciliation reads
// from its staged payload, value and scale alike (so every total and
// difference it prints is the same).
func TestKeptFiguresAreTheStagedFigures(t *testing.T) {
	raw, err := os.ReadFile("../dataimport/testdata/account_valid.json")
	if err != nil {
		t.Fatal(err)
	}
	acc, err := dataimport.DecodeAccount(raw, dataimport.AccountRules{PhoneRegion: "GB"})
	if err != nil {
		t.Fatal(err)
	}
	payload, err := json.Marshal(acc)
	if err != nil {
		t.Fatal(err)
	}
	var a dataimport.Account
	if err := json.Unmarshal(payload, &a); err != nil {
		t.Fatal(err)
	}
	want := dataimport.StagedFigures(&a)
	kept, err := keptFigures(string(payload))
	if err != nil {
		t.Fatal(err)
	}
	got, err := figuresFromKept(kept)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d figures kept, want %d: %s", len(got), len(want), kept)
	}
	nonZero := 0
	for k, w := range want {
		g, ok := got[k]
		if !ok || !g.Equal(w) || (!w.IsZero() && g.Exponent() != w.Exponent()) {
			t.Errorf("%s: kept %v (%v), staged %v", k, g, ok, w)
		}
		if !w.IsZero() {
			nonZero++
		}
	}
	if nonZero < 10 {
		t.Fatalf("the sample account has %d figures other than 0: %s", nonZero, kept)
	}
	t.Logf("kept: %s (%d bytes)", kept, len(kept))
}
