package dataimport

// Codes of CONTRACT §10 (products, markets, meter data). Append only.
const (
	CodeProductNotFound            = "product_not_found"
	CodeTariffCodeNotFound         = "tariff_code_not_found"
	CodeTariffFuelMismatch         = "tariff_fuel_mismatch"
	CodeProductNotAvailable        = "product_not_available"
	CodeInvalidMPAN                = "invalid_mpan"
	CodeInvalidMPRN                = "invalid_mprn"
	CodeInvalidPostcode            = "invalid_postcode"
	CodeInvalidProfileClass        = "invalid_profile_class"
	CodeDuplicateMeterSerialNumber = "duplicate_meter_serial_number"
	CodeDuplicateRegisterID        = "duplicate_register_id"
	CodeReadingRegisterNotFound    = "reading_register_not_found"
	CodeReadingValueTooLong        = "reading_value_too_long"
	CodeReadingDateOutsideSupply   = "reading_date_outside_supply"
	CodeInvalidPSRCode             = "invalid_psr_code"
	// Not named by §10; our own, for rules it implies.
	CodeDuplicateReading      = "duplicate_reading"
	CodeGapsOrOverlapsInRates = "gaps_or_overlaps_in_rate_periods"
	CodeProductInUse          = "product_in_use"
	CodeTariffCodeTaken       = "tariff_code_taken"
	CodeDuplicateProductCode  = "duplicate_product_code"
	CodeDuplicateTariffCode   = "duplicate_tariff_code"
	CodeInvalidNumberOfDigits = "invalid_number_of_digits"
	CodeMinValue              = "min_value"
	CodePermissionDenied      = "permission_denied"
	CodeInvalidSSC            = "invalid_ssc"
)

// Market is an industry's rule set for identifiers and settlement data
// (CONTRACT §10). A supplier names one with --market; NONE (a nil Market)
// keeps the generic rules. Implementations are pure: no I/O, no clock. A new
// market is one package implementing this interface, registered in
// pkg/market.
type Market interface {
	// Name is the supplier setting that selects the market ("GB").
	Name() string
	// MeterPoint checks a meter point's identifiers and settlement data.
	// report takes the field name relative to the meter point ("mpxn",
	// "profile_class", "ssc").
	MeterPoint(mp *MeterPoint, report func(field, code, detail string))
	// Postcode returns the code and detail of a postcode this market does
	// not recognise, "" when it is valid.
	Postcode(postcode string) (code, detail string)
	// PSRCode reports whether code is one of the market's priority
	// services register needs codes.
	PSRCode(code string) bool
}

// Generic bounds (market NONE): what the schema can hold.
const (
	maxProfileClass = 99 // meter_points.profile_class CHECK
	maxSSCLength    = 16
)
