package dataimport

import (
	"fmt"
	"slices"
)

// CatalogueFunc loads the tariffs and products of the given codes (those
// that exist; unknown codes are simply absent).
type CatalogueFunc func(tariffs, products []string) (Catalogue, error)

// CheckAccountCatalogue is the one place a validated account meets the
// catalogue (server and offline alike): the account_failed_validation
// error with every catalogue error, or nil.
func CheckAccountCatalogue(a *Account, load CatalogueFunc) error {
	tariffs, products := a.CatalogueCodes()
	if len(tariffs) == 0 && len(products) == 0 {
		return nil
	}
	cat, err := load(tariffs, products)
	if err != nil {
		return fmt.Errorf("load catalogue: %w", err)
	}
	if errs := CheckCatalogue(a, cat); len(errs) > 0 {
		return ValidationError(CodeAccountFailedValidation, "Account failed validation.", errs)
	}
	return nil
}

// StaticCatalogue is the catalogue of a products file ({"products": [...]},
// as importctl products load takes it), for validation without the
// service. It mirrors the store's query: a product's fuels are those of
// all its tariffs.
func StaticCatalogue(ps []Product) CatalogueFunc {
	cat := Catalogue{Tariffs: map[string]CatalogueTariff{}, Products: map[string]CatalogueProduct{}}
	for _, p := range ps {
		cp := CatalogueProduct{Code: p.Code, AvailableFrom: p.AvailableFrom, AvailableTo: p.AvailableTo}
		for _, t := range p.Tariffs {
			if !slices.Contains(cp.Fuels, t.Fuel) {
				cp.Fuels = append(cp.Fuels, t.Fuel)
			}
		}
		slices.Sort(cp.Fuels) // as the store's string_agg(DISTINCT …)
		cat.Products[p.Code] = cp
		for _, t := range p.Tariffs {
			cat.Tariffs[t.TariffCode] = CatalogueTariff{Fuel: t.Fuel, Product: cp}
		}
	}
	return func(_, _ []string) (Catalogue, error) { return cat, nil }
}

// Catalogue is the part of the product catalogue an account refers to,
// loaded by the store; CheckCatalogue applies the rules to it without I/O.
type Catalogue struct {
	Tariffs  map[string]CatalogueTariff  // by tariff code
	Products map[string]CatalogueProduct // by product code
}

// CatalogueTariff is a tariff with its product's availability.
type CatalogueTariff struct {
	Fuel    Fuel
	Product CatalogueProduct
}

// CatalogueProduct is a product's code, availability and tariffs' fuels.
type CatalogueProduct struct {
	Code          string
	AvailableFrom Date
	AvailableTo   *Date
	Fuels         []Fuel
}

func (p CatalogueProduct) availableOn(d Date) bool {
	return !d.Before(p.AvailableFrom) && (p.AvailableTo == nil || !d.After(*p.AvailableTo))
}

func (p CatalogueProduct) hasFuel(f Fuel) bool {
	for _, x := range p.Fuels {
		if x == f {
			return true
		}
	}
	return false
}

// CatalogueCodes lists the tariff and product codes an account names: its
// agreements' and its SUPPLY_CHARGE transactions'.
func (a *Account) CatalogueCodes() (tariffs, products []string) {
	for _, sa := range a.SupplyAddresses {
		for _, mp := range sa.MeterPoints {
			for _, ag := range mp.Agreements {
				switch {
				case given(ag.TariffCode):
					tariffs = append(tariffs, *ag.TariffCode)
				case given(ag.ProductCode):
					products = append(products, *ag.ProductCode)
				}
			}
		}
	}
	return tariffs, append(products, TransactionProductCodes(a.CurrentStatementTransactions)...)
}

// TransactionProductCodes lists the product codes of SUPPLY_CHARGE transactions.
func TransactionProductCodes(txs []Transaction) []string {
	var out []string
	for _, t := range txs {
		if t.Type == TransactionSupplyCharge && given(t.ProductCode) {
			out = append(out, *t.ProductCode)
		}
	}
	return out
}

// CheckCatalogue applies the rules of a supplier that requires products
// (CONTRACT §10) to a validated account: every agreement's tariff (or,
// failing that, product) exists, is available on the agreement's
// valid_from and supplies the meter point's fuel; every SUPPLY_CHARGE names
// an existing product.
func CheckCatalogue(a *Account, cat Catalogue) []FieldError {
	c := &collector{}
	for i := range a.SupplyAddresses {
		sa := &a.SupplyAddresses[i]
		mps := itemOf("supply_addresses", i).field("meter_points").String()
		for j := range sa.MeterPoints {
			mp := &sa.MeterPoints[j]
			ags := itemOf(mps, j).field("agreements").String()
			for k := range mp.Agreements {
				checkAgreement(c, &mp.Agreements[k], mp.Fuel, itemOf(ags, k), cat)
			}
		}
	}
	c.addAll(CheckTransactionProducts(a.CurrentStatementTransactions, "current_statement_transactions", cat))
	return c.list()
}

func checkAgreement(c *collector, ag *Agreement, fuel Fuel, it item, cat Catalogue) {
	var p CatalogueProduct
	var at attr
	switch {
	case given(ag.TariffCode):
		at = it.field("tariff_code")
		t, ok := cat.Tariffs[*ag.TariffCode]
		if !ok {
			c.addAt(at, CodeTariffCodeNotFound, fmt.Sprintf("Tariff %q is not in the product catalogue.", *ag.TariffCode))
			return
		}
		if t.Fuel != fuel {
			c.addAt(at, CodeTariffFuelMismatch, fmt.Sprintf("Tariff %q is for %s; the meter point is %s.", *ag.TariffCode, t.Fuel, fuel))
		}
		p = t.Product
	case given(ag.ProductCode):
		at = it.field("product_code")
		var ok bool
		if p, ok = cat.Products[*ag.ProductCode]; !ok {
			c.addAt(at, CodeProductNotFound, fmt.Sprintf("Product %q is not in the product catalogue.", *ag.ProductCode))
			return
		}
		if !p.hasFuel(fuel) {
			c.addAt(at, CodeTariffFuelMismatch, fmt.Sprintf("Product %q has no %s tariff.", p.Code, fuel))
		}
	default:
		return
	}
	if !p.availableOn(ag.ValidFrom) {
		c.addAt(at, CodeProductNotAvailable, fmt.Sprintf("Product %q is not available on %s.", p.Code, ag.ValidFrom))
	}
}

// CheckTransactionProducts requires each SUPPLY_CHARGE's product to exist.
func CheckTransactionProducts(txs []Transaction, path string, cat Catalogue) []FieldError {
	c := &collector{}
	for i, t := range txs {
		if t.Type != TransactionSupplyCharge || !given(t.ProductCode) {
			continue
		}
		if _, ok := cat.Products[*t.ProductCode]; !ok {
			c.addAt(itemOf(path, i).field("product_code"), CodeProductNotFound, fmt.Sprintf("Product %q is not in the product catalogue.", *t.ProductCode))
		}
	}
	return c.list()
}
