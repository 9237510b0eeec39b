package dataimport

import "fmt"

// validatePSR checks a customer's priority services register entries: a
// code the market knows (any non-blank code under NONE), and a period that
// does not end before it starts.
func validatePSR(c *collector, entries []PSREntry, path string, opts AccountRules) {
	for i := range entries {
		if c.full() {
			return
		}
		e := &entries[i]
		it := itemOf(path, i)
		c.requiredString(it.field("code"), e.Code, maxMeterFieldShort)
		if e.Code != "" && opts.Market != nil && !opts.Market.PSRCode(e.Code) {
			c.addAt(it.field("code"), CodeInvalidPSRCode, fmt.Sprintf("%q is not a %s priority services register needs code.", e.Code, opts.Market.Name()))
		}
		if e.EffectiveFrom != nil && e.EffectiveTo != nil && e.EffectiveTo.Before(*e.EffectiveFrom) {
			c.addAt(it.field("effective_to"), CodeStartDateLaterThanEndDate, "effective_to may not be before effective_from.")
		}
	}
}

// marketPostcode applies the market's postcode rule (none under NONE).
func (c *collector) marketPostcode(a attr, postcode string, m Market) {
	if m == nil {
		return
	}
	if code, detail := m.Postcode(postcode); code != "" {
		c.addAt(a, code, detail)
	}
}
