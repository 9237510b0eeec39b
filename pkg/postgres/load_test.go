package postgres_test

import (
	"context"
	"testing"

	"github.com/gridshift/dataimport/pkg/dataimport"
	"github.com/gridshift/dataimport/pkg/testutil"
)

func TestLoadForCreation(t *testing.T) {
	d := testutil.NewDatabase(t)
	ctx := context.Background()
	sup, err := d.DB.CreateSupplier(ctx, dataimport.Supplier{Code: "LOADS", PhoneRegion: "IE", WelcomeEmail: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.DB.Stage(ctx, sup, "E1", []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	res, err := d.DB.Stage(ctx, sup, "E1", []byte(`{"v":2}`))
	if err != nil {
		t.Fatal(err)
	}
	lp, err := d.DB.LoadForCreation(ctx, res.ProcessID)
	if err != nil {
		t.Fatal(err)
	}
	p := lp.Process
	if p.ID != res.ProcessID || p.SupplierID != sup.ID || p.ExternalAccountNumber != "E1" || p.Status != dataimport.StatusUnknown ||
		p.StagedVersion != 2 || p.CreatedAt.IsZero() {
		t.Fatalf("process %+v", p)
	}
	if lp.Supplier.ID != sup.ID || lp.Supplier.Code != "LOADS" || lp.Supplier.PhoneRegion != "IE" || !lp.Supplier.WelcomeEmail {
		t.Fatalf("supplier %+v", lp.Supplier)
	}
	if string(lp.Payload) != `{"v": 2}` {
		t.Fatalf("payload %s: not the latest version", lp.Payload)
	}
}
