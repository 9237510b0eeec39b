package dataimport

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/nyaruka/phonenumbers"
	"google.golang.org/protobuf/proto"
)

// Phone numbers are validated by libphonenumber (nyaruka/phonenumbers): its
// metadata is the standard. Its Go port builds each pattern's regexp key by
// string concatenation on every call, behind a global lock, matches each
// pattern twice, and IsValidNumber classifies a number twice (to find its
// region, then to validate it in that region): four numbers cost more than
// the rest of an account. The functions below give the library's answers
// from the same metadata and the same regular expressions, compiled once
// per region; FuzzDecodeOldVsNew and TestPhoneMatchesLibrary hold them to
// the library's own functions.

// parsePhone is phonenumbers.Parse(s, region) for a number that succeeds.
// The common spellings (digits and spaces, or + then digits and spaces) are
// read here, along the library's own steps; anything else (letters,
// punctuation, an international or national prefix the library would have
// to interpret, a number it would refuse) is handed to the library.
func parsePhone(s, region string) (*phonenumbers.PhoneNumber, error) {
	if num, ok := parseSimplePhone(s, region); ok {
		return num, nil
	}
	return phonenumbers.Parse(s, region)
}

// parseSimplePhone reports ok=false whenever it cannot be sure of giving the
// library's result.
func parseSimplePhone(s, region string) (*phonenumbers.PhoneNumber, bool) {
	if len(s) == 0 || len(s) > phonenumbers.MAX_INPUT_STRING_LENGTH {
		return nil, false
	}
	rest, plus := strings.CutPrefix(s, "+")
	// Digits separated by ASCII spaces, starting and ending with a digit:
	// the library keeps such a string whole (no leading or trailing junk,
	// no extension, no RFC 3966 parts, viable with 3 digits or more), and
	// its normalised form is its digits.
	if len(rest) == 0 || !isDigit(rest[0]) || !isDigit(rest[len(rest)-1]) {
		return nil, false
	}
	var buf [phonenumbers.MAX_INPUT_STRING_LENGTH]byte
	digits := buf[:0]
	for i := 0; i < len(rest); i++ {
		switch c := rest[i]; {
		case isDigit(c):
			digits = append(digits, c)
		case c != ' ':
			return nil, false
		}
	}
	if len(digits) < 3 {
		return nil, false
	}
	// The region must be one the library knows: otherwise it refuses a
	// national number and treats a + number differently.
	home := phoneMetaForRegion(region)
	if home == nil && region != "" {
		return nil, false
	}
	var cc int
	var meta *phoneMeta
	var national string
	if plus {
		// maybeExtractCountryCode with the + stripped: the longest known
		// calling code of 1 to 3 digits, none starting with 0.
		if len(digits) <= phonenumbers.MIN_LENGTH_FOR_NSN || digits[0] == '0' {
			return nil, false
		}
		calling := phonenumbers.GetSupportedCallingCodes()
		for i := 1; i <= phonenumbers.MAX_LENGTH_COUNTRY_CODE && i <= len(digits); i++ {
			n, _ := strconv.Atoi(string(digits[:i]))
			if calling[n] {
				cc, national = n, string(digits[i:])
				break
			}
		}
		if cc == 0 {
			return nil, false
		}
		if main := phonenumbers.GetRegionCodeForCountryCode(cc); main == region {
			meta = home
		} else {
			meta = phoneMetaForRegionOrCallingCode(cc, main)
		}
	} else {
		if home == nil {
			return nil, false
		}
		d := string(digits)
		// A leading international prefix (00 in GB) or the region's own
		// calling code make the library guess; leave those to it.
		if home.idd.MatchString(d) {
			return nil, false
		}
		if strings.HasPrefix(d, strconv.Itoa(int(home.md.GetCountryCode()))) {
			return nil, false
		}
		cc, meta, national = int(home.md.GetCountryCode()), home, d
	}
	if len(national) < phonenumbers.MIN_LENGTH_FOR_NSN {
		return nil, false
	}
	if meta != nil {
		if len(meta.lengths) == 0 { // the library would index an empty list
			return nil, false
		}
		stripped := meta.stripNationalPrefix(national)
		switch meta.testLength(stripped) {
		case phonenumbers.TOO_SHORT, phonenumbers.IS_POSSIBLE_LOCAL_ONLY, phonenumbers.INVALID_LENGTH:
		default:
			national = stripped
		}
	}
	if len(national) < phonenumbers.MIN_LENGTH_FOR_NSN || len(national) > phonenumbers.MAX_LENGTH_FOR_NSN {
		return nil, false
	}
	num := &phonenumbers.PhoneNumber{CountryCode: proto.Int32(int32(cc))}
	if national[0] == '0' { // setItalianLeadingZerosForPhoneNumber
		num.ItalianLeadingZero = proto.Bool(true)
		zeros := 1
		for zeros < len(national)-1 && national[zeros] == '0' {
			zeros++
		}
		if zeros != 1 {
			num.NumberOfLeadingZeros = proto.Int32(int32(zeros))
		}
	}
	n, err := strconv.ParseUint(national, 10, 64)
	if err != nil {
		return nil, false
	}
	num.NationalNumber = proto.Uint64(n)
	return num, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// phoneValid is phonenumbers.IsValidNumber: find the number's region
// (GetRegionCodeForNumber), then validate it there
// (IsValidNumberForRegion).
func phoneValid(num *phonenumbers.PhoneNumber) bool {
	cc := int(num.GetCountryCode())
	regions := phonenumbers.GetRegionCodesForCountryCode(cc)
	if len(regions) == 0 {
		return false
	}
	nsn := nationalSignificantNumber(num)
	region := regions[0]
	if len(regions) > 1 {
		region = ""
		for _, r := range regions {
			m := phoneMetaForRegion(r)
			if m == nil {
				continue
			}
			if m.leading != nil {
				if m.leading.MatchString(nsn) {
					region = r
					break
				}
			} else if m.knownType(nsn) {
				return true // validated in r already: the same test
			}
		}
	}
	m := phoneMetaForRegionOrCallingCode(cc, region)
	if m == nil || (region != phonenumbers.REGION_CODE_FOR_NON_GEO_ENTITY && int(m.md.GetCountryCode()) != cc) {
		return false
	}
	return m.knownType(nsn)
}

// nationalSignificantNumber is phonenumbers.GetNationalSignificantNumber
// without its two intermediate buffers.
func nationalSignificantNumber(num *phonenumbers.PhoneNumber) string {
	var buf [phonenumbers.MAX_LENGTH_FOR_NSN + 20]byte
	b := buf[:0]
	if num.GetItalianLeadingZero() && num.GetNumberOfLeadingZeros() > 0 {
		for range min(int(num.GetNumberOfLeadingZeros()), phonenumbers.MAX_LENGTH_FOR_NSN) {
			b = append(b, '0')
		}
	}
	return string(strconv.AppendUint(b, num.GetNationalNumber(), 10))
}

// formatE164 is phonenumbers.Format(num, phonenumbers.E164) for a number
// parsed from text (no raw input kept): + calling code, then the national
// significant number.
func formatE164(num *phonenumbers.PhoneNumber) string {
	return "+" + strconv.Itoa(int(num.GetCountryCode())) + nationalSignificantNumber(num)
}

// phoneMeta is one region's metadata with its patterns compiled.
type phoneMeta struct {
	md       *phonenumbers.PhoneMetadata
	general  phoneDesc
	fixed    phoneDesc
	mobile   phoneDesc
	others   []phoneDesc // premium rate, toll free, shared cost, VoIP, personal, pager, UAN, voicemail
	leading  *regexp.Regexp
	idd      *regexp.Regexp // anchored at the start
	prefix   *regexp.Regexp // national prefix for parsing, anchored at the start
	sameFM   bool
	lengths  []int32 // possible lengths of the general description
	localLen []int32
}

type phoneDesc struct {
	lengths []int32
	re      *regexp.Regexp
}

// match is isNumberMatchingDesc: a possible length, then the whole pattern.
func (d *phoneDesc) match(n string) bool {
	if len(d.lengths) > 0 {
		found := false
		for _, l := range d.lengths {
			if int32(len(n)) == l {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return d.re.MatchString(n)
}

// knownType is getNumberTypeHelper(n, md) != UNKNOWN, testing the likeliest
// types first (which does not change whether any matches).
func (m *phoneMeta) knownType(n string) bool {
	if !m.general.match(n) {
		return false
	}
	if m.fixed.match(n) || (!m.sameFM && m.mobile.match(n)) {
		return true
	}
	for i := range m.others {
		if m.others[i].match(n) {
			return true
		}
	}
	return false
}

// stripNationalPrefix is maybeStripNationalPrefixAndCarrierCode.
func (m *phoneMeta) stripNationalPrefix(n string) string {
	if m.prefix == nil {
		return n
	}
	groups := m.prefix.FindStringSubmatchIndex(n) // nil exactly when MatchString is false
	if groups == nil {
		return n
	}
	viable := m.general.re.MatchString(n)
	last := len(groups)/2 - 1
	if rule := m.md.GetNationalPrefixTransformRule(); rule != "" && groups[last*2] >= 0 {
		transformed := m.prefix.ReplaceAllString(n, rule)
		if viable && !m.general.re.MatchString(transformed) {
			return n
		}
		return transformed
	}
	if viable && !m.general.re.MatchString(n[groups[1]:]) {
		return n
	}
	return n[groups[1]:]
}

// testLength is testNumberLength(n, md, UNKNOWN).
func (m *phoneMeta) testLength(n string) phonenumbers.ValidationResult {
	if m.lengths[0] == -1 {
		return phonenumbers.INVALID_LENGTH
	}
	l := int32(len(n))
	for _, x := range m.localLen {
		if x == l {
			return phonenumbers.IS_POSSIBLE_LOCAL_ONLY
		}
	}
	switch {
	case m.lengths[0] == l:
		return phonenumbers.IS_POSSIBLE
	case m.lengths[0] > l:
		return phonenumbers.TOO_SHORT
	case m.lengths[len(m.lengths)-1] < l:
		return phonenumbers.TOO_LONG
	}
	for _, x := range m.lengths[1:] {
		if x == l {
			return phonenumbers.IS_POSSIBLE
		}
	}
	return phonenumbers.INVALID_LENGTH
}

type phoneIndex struct {
	regions map[string]*phonenumbers.PhoneMetadata
	nonGeo  map[int32]*phonenumbers.PhoneMetadata
}

// phoneIndex finds a region's metadata (the library keeps its own index
// private); phoneCompiled holds the regions compiled so far: compiling all
// of them up front would cost tens of megabytes for regions never seen.
var (
	phoneIndexOnce = sync.OnceValue(func() phoneIndex {
		idx := phoneIndex{regions: map[string]*phonenumbers.PhoneMetadata{}, nonGeo: map[int32]*phonenumbers.PhoneMetadata{}}
		coll, err := phonenumbers.MetadataCollection()
		if err != nil { // the embedded metadata: the library's own init would have failed first
			panic(err)
		}
		supported := phonenumbers.GetSupportedRegions()
		for _, md := range coll.GetMetadata() {
			if md.GetId() == phonenumbers.REGION_CODE_FOR_NON_GEO_ENTITY {
				idx.nonGeo[md.GetCountryCode()] = md
			} else if supported[md.GetId()] {
				idx.regions[md.GetId()] = md
			}
		}
		return idx
	})
	phoneCompiled sync.Map // *phonenumbers.PhoneMetadata -> *phoneMeta
)

func compiledPhoneMeta(md *phonenumbers.PhoneMetadata) *phoneMeta {
	if md == nil {
		return nil
	}
	if m, ok := phoneCompiled.Load(md); ok {
		return m.(*phoneMeta)
	}
	m, _ := phoneCompiled.LoadOrStore(md, compilePhoneMeta(md))
	return m.(*phoneMeta)
}

// phoneMetaForRegion is getMetadataForRegion: nil for an unknown region.
func phoneMetaForRegion(region string) *phoneMeta {
	if region == "" {
		return nil
	}
	return compiledPhoneMeta(phoneIndexOnce().regions[region])
}

// phoneMetaForRegionOrCallingCode is getMetadataForRegionOrCallingCode.
func phoneMetaForRegionOrCallingCode(cc int, region string) *phoneMeta {
	if region == phonenumbers.REGION_CODE_FOR_NON_GEO_ENTITY {
		if !phonenumbers.GetSupportedCallingCodes()[cc] {
			return nil
		}
		return compiledPhoneMeta(phoneIndexOnce().nonGeo[int32(cc)])
	}
	return phoneMetaForRegion(region)
}

func compilePhoneMeta(md *phonenumbers.PhoneMetadata) *phoneMeta {
	desc := func(d *phonenumbers.PhoneNumberDesc) phoneDesc {
		return phoneDesc{lengths: d.GetPossibleLength(), re: regexp.MustCompile("^(?:" + d.GetNationalNumberPattern() + ")$")}
	}
	m := &phoneMeta{
		md:      md,
		general: desc(md.GetGeneralDesc()),
		fixed:   desc(md.GetFixedLine()),
		mobile:  desc(md.GetMobile()),
		others: []phoneDesc{desc(md.GetPremiumRate()), desc(md.GetTollFree()), desc(md.GetSharedCost()), desc(md.GetVoip()),
			desc(md.GetPersonalNumber()), desc(md.GetPager()), desc(md.GetUan()), desc(md.GetVoicemail())},
		sameFM:   md.GetSameMobileAndFixedLinePattern(),
		lengths:  md.GetGeneralDesc().GetPossibleLength(),
		localLen: md.GetGeneralDesc().GetPossibleLengthLocalOnly(),
	}
	if ld := md.GetLeadingDigits(); ld != "" {
		m.leading = regexp.MustCompile("^(?:" + ld + ")")
	}
	// Only a prefix at the start matters: anchored, a match is tried at
	// one position instead of at each (the leftmost match of the
	// unanchored expression starts at 0 exactly when this one matches).
	m.idd = regexp.MustCompile("^(?:" + md.GetInternationalPrefix() + ")")
	if p := md.GetNationalPrefixForParsing(); p != "" {
		m.prefix = regexp.MustCompile("^(?:" + p + ")")
	}
	return m
}
