package postgres_test

import (
	"reflect"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/testutil"
)

// migrator convert --catalogue FILE must see the catalogue the server sees
// once FILE is loaded: for every code of the demo catalogue (and an unknown
// one), StaticCatalogue answers exactly what the store's Catalogue does.
func TestStaticCatalogueEqualsStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	raw, err := testutil.ReadRepoFile("deploy/local/demo_products.json")
	e.must(err)
	req, err := dataimport.DecodeProducts(raw)
	e.must(err)
	_, err = e.db.UpsertProducts(e.ctx, req.Products)
	e.must(err)
	tariffs, products := []string{"NO-SUCH-TARIFF"}, []string{"NO-SUCH-PRODUCT"}
	for _, p := range req.Products {
		products = append(products, p.Code)
		for _, tr := range p.Tariffs {
			tariffs = append(tariffs, tr.TariffCode)
		}
	}
	store, err := e.db.Catalogue(e.ctx, tariffs, products)
	e.must(err)
	static, err := dataimport.StaticCatalogue(req.Products)(tariffs, products)
	e.must(err)
	if !reflect.DeepEqual(store, static) {
		t.Fatalf("store:\n%+v\nstatic:\n%+v", store, static)
	}
	if len(static.Tariffs) == 0 || len(static.Products) != len(req.Products) {
		t.Fatalf("catalogue not read: %+v", static)
	}
}
