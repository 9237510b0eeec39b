package dataimport

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/nyaruka/phonenumbers"
	"google.golang.org/protobuf/proto"
)

// phoneRegions cover single- and shared-calling-code regions, national
// prefixes with transform rules (AR, BR, MX), Italian leading zeros (IT),
// non-geographic codes (+800) and regions the library does not know.
var phoneRegions = []string{"GB", "JE", "GG", "IM", "US", "CA", "DE", "FR", "IT", "AR", "BR", "MX", "RU", "KZ", "AU", "IN", "CN", "", "001", "XX", "gb"}

// checkPhoneAgainstLibrary requires parsePhone and phoneValid to give the
// library's answers for s: the same number (or an error for the same
// input), the same validity, and so the same E.164 form.
func checkPhoneAgainstLibrary(t *testing.T, s, region string) {
	t.Helper()
	want, wantErr := phonenumbers.Parse(s, region)
	if fast, ok := parseSimplePhone(s, region); ok {
		if wantErr != nil || !proto.Equal(fast, want) {
			t.Fatalf("Parse(%q, %q): library %v %v, fast path %v", s, region, want, wantErr, fast)
		}
	}
	got, gotErr := parsePhone(s, region)
	if (gotErr == nil) != (wantErr == nil) {
		t.Fatalf("Parse(%q, %q): library error %v, ours %v", s, region, wantErr, gotErr)
	}
	if wantErr != nil {
		return
	}
	if phoneValid(got) != phonenumbers.IsValidNumber(want) {
		t.Fatalf("IsValidNumber(%q in %q): library %v, ours %v", s, region, phonenumbers.IsValidNumber(want), phoneValid(got))
	}
	if e164, lib := formatE164(got), phonenumbers.Format(want, phonenumbers.E164); e164 != lib {
		t.Fatalf("Format(%q in %q, E164): library %q, ours %q", s, region, lib, e164)
	}
	if nsn, lib := nationalSignificantNumber(got), phonenumbers.GetNationalSignificantNumber(want); nsn != lib {
		t.Fatalf("GetNationalSignificantNumber(%q in %q): library %q, ours %q", s, region, lib, nsn)
	}
}

func TestPhoneMatchesLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	fixed := []string{"07400 123456", "+44 7400 123456", "020 7946 0018", "0113 496 0000", "+44 7123 456789", "0044 7400 123456",
		"447400123456", "+447400123456", "01534 123456", "01624 123456", "+44 1481 123456", "+1 202 555 0143", "202 555 0143",
		"+800 1234 5678", "+39 06 1234 5678", "06 1234 5678", "+54 9 11 1234 5678", "011 15 1234 5678", "0 11 1234-5678",
		"+55 11 91234 5678", "0 21 11 91234 5678", "+52 1 55 1234 5678", "8 800 555 35 35", "+7 800 555 35 35", "0", "00", "+0",
		"+", "+ 1", "12", "123", "+12", "+123", "0000000000", "+999 1234 5678", "+44 0 7400 123456", "+44 (0)20 7946 0018",
		"07400 123456 ext 12", "07400-123456", " 07400 123456", "07400  123456", strings.Repeat("1", 251)}
	for _, s := range fixed {
		for _, r := range phoneRegions {
			checkPhoneAgainstLibrary(t, s, r)
		}
	}
	// Random numbers in the fast path's shape, weighted towards prefixes
	// that mean something somewhere.
	prefixes := []string{"", "0", "00", "0044", "44", "+44", "+1", "1", "+7", "8", "+39", "+54 9", "+55", "+52", "+800", "+", "011", "+49", "0049"}
	for i := 0; i < 8000; i++ {
		var b strings.Builder
		b.WriteString(prefixes[rng.IntN(len(prefixes))])
		for n := 1 + rng.IntN(16); n > 0; n-- {
			if b.Len() > 0 && rng.IntN(4) == 0 {
				b.WriteByte(' ')
			}
			b.WriteByte(byte('0' + rng.IntN(10)))
		}
		checkPhoneAgainstLibrary(t, b.String(), phoneRegions[rng.IntN(len(phoneRegions))])
	}
}

// The fast path must take the spellings partners actually send, or it buys
// nothing.
func TestPhoneFastPathTakesCommonSpellings(t *testing.T) {
	for _, s := range []string{"07400 123456", "020 7946 0018", "+44 7400 123456", "+447400123456", "+1 202 555 0143"} {
		if _, ok := parseSimplePhone(s, "GB"); !ok {
			t.Errorf("%q is left to the library", s)
		}
	}
}
