package dataimport_test

import (
	"reflect"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

func TestReplicaFingerprintIgnoresOrder(t *testing.T) {
	a := dataimport.ReplicaSettings{PaymentVendors: []string{"STRIPE", "GOCARDLESS"}, Markets: []string{"gb"}, Switches: map[string]string{"X": "1"}}
	b := dataimport.ReplicaSettings{PaymentVendors: []string{"GOCARDLESS", "STRIPE"}, Markets: []string{"gb"}, Switches: map[string]string{"X": "1"}}
	if a.Fingerprint() != b.Fingerprint() {
		t.Fatalf("same settings, different fingerprints: %s %s", a.Fingerprint(), b.Fingerprint())
	}
	b.PaymentVendors = []string{"STRIPE"}
	if a.Fingerprint() == b.Fingerprint() {
		t.Fatal("different vendors, same fingerprint")
	}
}

func TestReplicaDifferencesNamesTheOddOneOut(t *testing.T) {
	full := dataimport.ReplicaSettings{PaymentVendors: []string{"STRIPE"}, Markets: []string{"gb"}, Switches: map[string]string{"SLOT_LEASE": "2m0s"}}
	bare := dataimport.ReplicaSettings{Markets: []string{"gb"}, Switches: map[string]string{"SLOT_LEASE": "1m0s"}}
	got := dataimport.ReplicaDifferences([]dataimport.Replica{
		{Instance: "api", Role: "api", Version: "abc", Settings: full},
		{Instance: "w1", Role: "worker", Version: "abc", Settings: full},
		{Instance: "w2", Role: "worker", Version: "def", Settings: bare},
	})
	want := map[string][]string{"w2": {"version def (others: abc)", "payment vendors: missing STRIPE", "SLOT_LEASE=1m0s (others: 2m0s)"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("differences %q, want %q", got, want)
	}
	// Two replicas that disagree: neither is the reference, both are flagged.
	got = dataimport.ReplicaDifferences([]dataimport.Replica{{Instance: "a", Settings: full}, {Instance: "b", Settings: bare}})
	if len(got["a"]) == 0 || len(got["b"]) == 0 || got["a"][0] != "payment vendors: extra STRIPE" {
		t.Fatalf("tie: %q", got)
	}
}

func TestUnservedVendorsAreWhatAPIsAcceptAndTheWorkerLacks(t *testing.T) {
	live := []dataimport.Replica{
		{Role: "api", Settings: dataimport.ReplicaSettings{PaymentVendors: []string{"STRIPE"}}},
		{Role: "worker", Settings: dataimport.ReplicaSettings{PaymentVendors: []string{"OTHER"}}},
	}
	if got := dataimport.UnservedVendors(nil, live); !reflect.DeepEqual(got, []string{"STRIPE"}) {
		t.Fatalf("unserved %q", got)
	}
	if got := dataimport.UnservedVendors([]string{"STRIPE"}, live); len(got) != 0 {
		t.Fatalf("unserved %q", got)
	}
}
