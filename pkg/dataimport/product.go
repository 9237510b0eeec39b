package dataimport

import (
	"fmt"
	"slices"

	"github.com/shopspring/decimal"
)

// The product catalogue (issue 18, CONTRACT §10). Products are
// instance-wide; agreements and SUPPLY_CHARGE transactions name them. Array
// bounds are documented maxima (README): 100 products per request, 50
// tariffs per product, 200 unit rates and 100 standing charges per tariff.

// Product is one catalogue product with its tariffs.
type Product struct {
	Code          string   `json:"code" dataimport:"required"`
	FullName      string   `json:"full_name" dataimport:"required"`
	DisplayName   string   `json:"display_name" dataimport:"required"`
	AvailableFrom Date     `json:"available_from" dataimport:"required"`
	AvailableTo   *Date    `json:"available_to"`
	IsVariable    bool     `json:"is_variable"`
	IsGreen       bool     `json:"is_green"`
	IsPrepay      bool     `json:"is_prepay"`
	IsBusiness    bool     `json:"is_business"`
	Tariffs       []Tariff `json:"tariffs" dataimport:"required,max=50"`
}

// Tariff is a product's price for one fuel, region and payment method.
type Tariff struct {
	TariffCode      string           `json:"tariff_code" dataimport:"required"`
	Fuel            Fuel             `json:"fuel" dataimport:"required"`
	Region          string           `json:"region"`
	PaymentMethod   string           `json:"payment_method"`
	UnitRates       []Rate           `json:"unit_rates" dataimport:"max=200"`
	StandingCharges []StandingCharge `json:"standing_charges" dataimport:"max=100"`
}

// Rate is a unit rate in pence per unit; valid_to is inclusive, nil open.
type Rate struct {
	RateType  string          `json:"rate_type" dataimport:"required"`
	Value     decimal.Decimal `json:"value" dataimport:"required"`
	ValidFrom Date            `json:"valid_from" dataimport:"required"`
	ValidTo   *Date           `json:"valid_to"`
}

// StandingCharge is pence per day.
type StandingCharge struct {
	Value     decimal.Decimal `json:"value" dataimport:"required"`
	ValidFrom Date            `json:"valid_from" dataimport:"required"`
	ValidTo   *Date           `json:"valid_to"`
}

// ProductsRequest is the body of validate-products and
// products/create-or-update.
type ProductsRequest struct {
	Products []Product `json:"products" dataimport:"required,max=100"`
}

const (
	rateWholeDigits = 8 // unit_rates.value, standing_charges.value numeric(12,4)
	ratePlaces      = 4 // pence with up to four places
	maxProductCode  = 64
)

// DecodeProducts is strict decode plus Validate, as the API and importctl
// both run it.
func DecodeProducts(body []byte) (*ProductsRequest, error) {
	return Decode(body, CodeInvalidPayload, "Products failed validation.", (*ProductsRequest).Validate)
}

// Validate applies every product rule, collecting all errors.
func (r *ProductsRequest) Validate() []FieldError {
	c := &collector{}
	products := map[string]attr{}
	tariffs := map[string]attr{}
	for i := range r.Products {
		if c.full() {
			break
		}
		validateProduct(c, &r.Products[i], itemOf("products", i), products, tariffs)
	}
	return c.list()
}

func validateProduct(c *collector, p *Product, it item, products, tariffs map[string]attr) {
	code := it.field("code")
	c.requiredString(code, p.Code, maxProductCode)
	c.unique(code, p.Code, products, CodeDuplicateProductCode, "Product %q is already given by %s.")
	c.requiredString(it.field("full_name"), p.FullName, defaultMaxLength)
	c.requiredString(it.field("display_name"), p.DisplayName, defaultMaxLength)
	if p.AvailableTo != nil && !p.AvailableFrom.IsZero() && p.AvailableTo.Before(p.AvailableFrom) {
		c.addAt(it.field("available_to"), CodeStartDateLaterThanEndDate, "available_to may not be before available_from.")
	}
	if len(p.Tariffs) == 0 {
		c.addAt(it.field("tariffs"), CodeRequired, "A product needs at least one tariff.")
	}
	path := it.field("tariffs").String()
	for k := range p.Tariffs {
		if c.full() {
			return
		}
		validateTariff(c, &p.Tariffs[k], itemOf(path, k), tariffs)
	}
}

func validateTariff(c *collector, t *Tariff, it item, tariffs map[string]attr) {
	code := it.field("tariff_code")
	c.requiredString(code, t.TariffCode, maxProductCode)
	c.unique(code, t.TariffCode, tariffs, CodeDuplicateTariffCode, "Tariff %q is already given by %s.")
	choice(c, it.field("fuel"), t.Fuel, Fuels)
	c.maxLength(it.field("region"), t.Region, maxProductCode)
	c.maxLength(it.field("payment_method"), t.PaymentMethod, maxProductCode)

	rates := it.field("unit_rates").String()
	byType := map[string][]period{}
	for i := range t.UnitRates {
		r := &t.UnitRates[i]
		rit := itemOf(rates, i)
		c.requiredString(rit.field("rate_type"), r.RateType, maxProductCode)
		c.boundedDecimal(rit.field("value"), r.Value, rateWholeDigits, ratePlaces, false)
		if checkPeriod(c, rit, r.ValidFrom, r.ValidTo) {
			byType[r.RateType] = append(byType[r.RateType], period{i, r.ValidFrom, r.ValidTo})
		}
	}
	types := make([]string, 0, len(byType))
	for rt := range byType {
		types = append(types, rt)
	}
	slices.Sort(types) // errors in a stable order
	for _, rt := range types {
		consecutive(c, rates, byType[rt], fmt.Sprintf("Unit rates of type %q", rt))
	}

	charges := it.field("standing_charges").String()
	var ps []period
	for i := range t.StandingCharges {
		s := &t.StandingCharges[i]
		sit := itemOf(charges, i)
		c.boundedDecimal(sit.field("value"), s.Value, rateWholeDigits, ratePlaces, true)
		if checkPeriod(c, sit, s.ValidFrom, s.ValidTo) {
			ps = append(ps, period{i, s.ValidFrom, s.ValidTo})
		}
	}
	consecutive(c, charges, ps, "Standing charges")
}

// period is one dated item of a list (index into it).
type period struct {
	index int
	from  Date
	to    *Date // inclusive; nil open-ended
}

// checkPeriod reports a period that ends before it starts; it returns
// whether the period can take part in the consecutiveness check.
func checkPeriod(c *collector, it item, from Date, to *Date) bool {
	if from.IsZero() {
		return false // failed to bind, reported already
	}
	if to != nil && to.Before(from) {
		c.addAt(it.field("valid_to"), CodeStartDateLaterThanEndDate, "valid_to may not be before valid_from.")
		return false
	}
	return true
}

// consecutive requires the periods, ordered by start, to follow each other
// day after day (valid_to inclusive), only the last open-ended: no gap, no
// overlap. One error per list is enough to act on.
func consecutive(c *collector, path string, ps []period, what string) {
	slices.SortStableFunc(ps, func(x, y period) int { return x.from.Compare(y.from) })
	for n := 1; n < len(ps); n++ {
		prev, next := ps[n-1], ps[n]
		if prev.to == nil || next.from != prev.to.AddDays(1) {
			c.add(path, CodeGapsOrOverlapsInRates, fmt.Sprintf(
				"%s must be consecutive without overlap: item %d must start the day after item %d ends (valid_to is inclusive; only the last may be open-ended).",
				what, next.index, prev.index))
			return
		}
	}
}
