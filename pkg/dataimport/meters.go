package dataimport

import (
	"fmt"

	"github.com/shopspring/decimal"
)

// Meter data of a meter point (issue 18, item 3): all optional, validated
// when given. Array bounds are documented maxima (README): 20 meters per
// meter point, 20 registers per meter, 100 transfer readings per meter.
type Meter struct {
	SerialNumber     string            `json:"serial_number" dataimport:"required"`
	Registers        []Register        `json:"registers,omitempty" dataimport:"max=20"`
	TransferReadings []TransferReading `json:"transfer_readings,omitempty" dataimport:"max=100"`
}

// Register is one register of a meter; number_of_digits bounds its readings.
type Register struct {
	RegisterID     string  `json:"register_id" dataimport:"required"`
	NumberOfDigits int     `json:"number_of_digits" dataimport:"required"`
	RateType       *string `json:"rate_type,omitempty"`
}

// TransferReading is an opening reading of one register.
type TransferReading struct {
	RegisterID   string          `json:"register_id" dataimport:"required"`
	ReadingDate  Date            `json:"reading_date" dataimport:"required"`
	ReadingValue decimal.Decimal `json:"reading_value" dataimport:"required"`
	ReadingType  *string         `json:"reading_type,omitempty"`
}

const (
	maxNumberOfDigits  = 12 // meter_registers CHECK; reading_value numeric(14,2)
	readingPlaces      = 2
	eacWholeDigits     = 12 // estimated_annual_consumption numeric(14,2)
	eacPlaces          = 2
	maxMeterFieldShort = 64
)

// validateMeterData checks a meter point's settlement data and meters.
// serials is shared across the account (serial numbers are unique within
// it).
func validateMeterData(c *collector, mp *MeterPoint, it item, serials map[string]attr, opts AccountRules) {
	if mp.ProfileClass != nil && (*mp.ProfileClass < 0 || *mp.ProfileClass > maxProfileClass) {
		c.addAt(it.field("profile_class"), CodeInvalidProfileClass, fmt.Sprintf("profile_class must be from 0 to %d.", maxProfileClass))
	}
	c.optionalString(it.field("ssc"), mp.SSC, maxSSCLength)
	if mp.EstimatedAnnualConsumption != nil {
		c.boundedDecimal(it.field("estimated_annual_consumption"), *mp.EstimatedAnnualConsumption, eacWholeDigits, eacPlaces, true)
	}
	if opts.Market != nil {
		opts.Market.MeterPoint(mp, func(field, code, detail string) { c.addAt(it.field(field), code, detail) })
	}
	meters := it.field("meters").String()
	for k := range mp.Meters {
		if c.full() {
			return
		}
		validateMeter(c, mp, &mp.Meters[k], itemOf(meters, k), serials, opts.Today)
	}
}

func validateMeter(c *collector, mp *MeterPoint, m *Meter, it item, serials map[string]attr, today Date) {
	serial := it.field("serial_number")
	c.requiredString(serial, m.SerialNumber, defaultMaxLength)
	c.unique(serial, m.SerialNumber, serials, CodeDuplicateMeterSerialNumber, "Meter serial number %q is already used by %s.")
	digits := make(map[string]int, len(m.Registers))
	regs := it.field("registers").String()
	for r := range m.Registers {
		reg := &m.Registers[r]
		rit := itemOf(regs, r)
		c.requiredString(rit.field("register_id"), reg.RegisterID, maxMeterFieldShort)
		c.optionalString(rit.field("rate_type"), reg.RateType, maxMeterFieldShort)
		if reg.NumberOfDigits < 1 || reg.NumberOfDigits > maxNumberOfDigits {
			c.addAt(rit.field("number_of_digits"), CodeInvalidNumberOfDigits, fmt.Sprintf("number_of_digits must be from 1 to %d.", maxNumberOfDigits))
		}
		if reg.RegisterID == "" {
			continue
		}
		if _, dup := digits[reg.RegisterID]; dup {
			c.addAt(rit.field("register_id"), CodeDuplicateRegisterID, fmt.Sprintf("Register %q is given more than once on this meter.", reg.RegisterID))
			continue
		}
		digits[reg.RegisterID] = reg.NumberOfDigits
	}
	type registerDate struct { // the date itself, not its text: no string per reading
		register string
		date     Date
	}
	seen := make(map[registerDate]bool, len(m.TransferReadings))
	reads := it.field("transfer_readings").String()
	for r := range m.TransferReadings {
		if c.full() {
			return
		}
		rd := &m.TransferReadings[r]
		rit := itemOf(reads, r)
		c.requiredString(rit.field("register_id"), rd.RegisterID, maxMeterFieldShort)
		c.optionalString(rit.field("reading_type"), rd.ReadingType, maxMeterFieldShort)
		n, known := digits[rd.RegisterID]
		if rd.RegisterID != "" && !known {
			c.addAt(rit.field("register_id"), CodeReadingRegisterNotFound, fmt.Sprintf("Register %q is not a register of this meter.", rd.RegisterID))
		}
		value := rit.field("reading_value")
		switch {
		case rd.ReadingValue.Sign() < 0:
			c.addAt(value, CodeMinValue, "A reading may not be negative.")
		case significantPlaces(rd.ReadingValue) > readingPlaces:
			c.addAt(value, CodeMaxDecimalPlaces, "Ensure that there are no more than 2 decimal places.")
		case known && n >= 1 && n <= maxNumberOfDigits && wholeDigits(rd.ReadingValue) > n:
			c.addAt(value, CodeReadingValueTooLong, fmt.Sprintf("The reading has more digits than the register's %d.", n))
		}
		if !rd.ReadingDate.IsZero() {
			switch {
			case !mp.SupplyStartDate.IsZero() && rd.ReadingDate.Before(mp.SupplyStartDate),
				mp.SupplyEndDate != nil && rd.ReadingDate.After(*mp.SupplyEndDate):
				c.addAt(rit.field("reading_date"), CodeReadingDateOutsideSupply, "reading_date must lie inside the meter point's supply period.")
			case !today.IsZero() && rd.ReadingDate.After(today):
				c.addAt(rit.field("reading_date"), CodeDateInFuture, "Date may not be in the future.")
			}
			key := registerDate{rd.RegisterID, rd.ReadingDate}
			if seen[key] {
				c.addAt(rit.field("reading_date"), CodeDuplicateReading, "A register has one reading per date.")
			}
			seen[key] = true
		}
	}
}

// wholeDigits counts the digits before the point of |d| (0 for 0.x).
func wholeDigits(d decimal.Decimal) int {
	if c, exp, ok := smallCoefficient(d); ok {
		return wholeDigitsSmall(c, exp)
	}
	return wholeDigitsBig(d)
}

// wholeDigitsBig is wholeDigits for any coefficient (and the reference
// its int64 counting is tested against).
func wholeDigitsBig(d decimal.Decimal) int {
	s := d.Abs().Truncate(0).String()
	if s == "0" {
		return 0
	}
	return len(s)
}

// boundedDecimal checks a decimal against a numeric(whole+places, places)
// column; nonNegative refuses values below zero.
func (c *collector) boundedDecimal(a attr, d decimal.Decimal, whole, places int, nonNegative bool) {
	switch {
	case nonNegative && d.Sign() < 0:
		c.addAt(a, CodeMinValue, "Ensure this value is greater than or equal to 0.")
	case significantPlaces(d) > places:
		c.addAt(a, CodeMaxDecimalPlaces, fmt.Sprintf("Ensure that there are no more than %d decimal places.", places))
	case wholeDigits(d) > whole:
		c.addAt(a, CodeMaxWholeDigits, fmt.Sprintf("Ensure that there are no more than %d digits before the decimal point.", whole))
	}
}
