package gb_test

import (
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/market/gb"
)

func TestValidMPANCore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mpan string
		ok   bool
	}{
		{"1312345678907", true}, // the worked example of the MRA check digit
		{"2000001234560", true},
		{"1010000000019", true},
		{"2345678901238", true},
		{"1312345678906", false}, // wrong check digit
		{"2000001234561", false},
		{"1010000000010", false},
		{"131234567890", false},   // 12 digits
		{"13123456789070", false}, // 14 digits
		{"13123456789O7", false},  // letter O
		{"", false},
		{"00111222131234567890", false}, // a full MPAN's top line is not a core
	} {
		if got := gb.ValidMPANCore(tc.mpan); got != tc.ok {
			t.Errorf("ValidMPANCore(%q) = %t, want %t", tc.mpan, got, tc.ok)
		}
	}
}

func TestValidMPRN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mprn string
		ok   bool
	}{
		{"1234567", true}, {"7432155404", true}, {"123456", true},
		{"12345", false}, {"12345678901", false}, {"0123456", false}, {"12345A7", false}, {"", false},
	} {
		if got := gb.ValidMPRN(tc.mprn); got != tc.ok {
			t.Errorf("ValidMPRN(%q) = %t, want %t", tc.mprn, got, tc.ok)
		}
	}
}

func TestValidPostcode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pc string
		ok bool
	}{
		{"SW1A 1AA", true}, {"EC1A 1BB", true}, {"W1A 0AX", true}, {"M1 1AE", true}, {"B33 8TH", true},
		{"CR2 6XH", true}, {"DN55 1PT", true}, {"sw1a1aa", true}, {"GIR 0AA", true},
		{"SW1A 1A", false}, {"QW1 1AA", false}, {"12345", false}, {"SW1A  1AA", false}, {"", false}, {"M1 1CE", false},
	} {
		if got := gb.ValidPostcode(tc.pc); got != tc.ok {
			t.Errorf("ValidPostcode(%q) = %t, want %t", tc.pc, got, tc.ok)
		}
	}
}

func TestPSRCode(t *testing.T) {
	t.Parallel()
	m := gb.Market{}
	for _, tc := range []struct {
		code string
		ok   bool
	}{{"01", true}, {"1", true}, {"15", true}, {"36", true}, {"00", false}, {"37", false}, {"ABC", false}, {"", false}, {"001", false}} {
		if got := m.PSRCode(tc.code); got != tc.ok {
			t.Errorf("PSRCode(%q) = %t, want %t", tc.code, got, tc.ok)
		}
	}
}

func TestMeterPoint(t *testing.T) {
	t.Parallel()
	pc := func(n int) *int { return &n }
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name string
		mp   dataimport.MeterPoint
		want []string // code@field
	}{
		{"valid electricity", dataimport.MeterPoint{MPXN: "1312345678907", Fuel: dataimport.FuelElectricity, ProfileClass: pc(1), SSC: str("0393")}, nil},
		{"valid gas", dataimport.MeterPoint{MPXN: "7432155404", Fuel: dataimport.FuelGas}, nil},
		{"bad check digit", dataimport.MeterPoint{MPXN: "1312345678906", Fuel: dataimport.FuelElectricity}, []string{"invalid_mpan@mpxn"}},
		{"MPRN given for electricity", dataimport.MeterPoint{MPXN: "7432155404", Fuel: dataimport.FuelElectricity}, []string{"invalid_mpan@mpxn"}},
		{"MPAN given for gas", dataimport.MeterPoint{MPXN: "1312345678907", Fuel: dataimport.FuelGas}, []string{"invalid_mprn@mpxn"}},
		{"profile class 9", dataimport.MeterPoint{MPXN: "1312345678907", Fuel: dataimport.FuelElectricity, ProfileClass: pc(9)}, []string{"invalid_profile_class@profile_class"}},
		{"profile class on gas", dataimport.MeterPoint{MPXN: "7432155404", Fuel: dataimport.FuelGas, ProfileClass: pc(1), SSC: str("0393")},
			[]string{"invalid_profile_class@profile_class", "invalid_ssc@ssc"}},
		{"ssc format", dataimport.MeterPoint{MPXN: "1312345678907", Fuel: dataimport.FuelElectricity, SSC: str("39")}, []string{"invalid_ssc@ssc"}},
	} {
		var got []string
		gb.Market{}.MeterPoint(&tc.mp, func(field, code, _ string) { got = append(got, code+"@"+field) })
		if len(got) != len(tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
			}
		}
	}
}
