package postgres_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/dataimport"
)

// A supplier's event (supplier.paused-v1) is read by every organisation
// granted the supplier and by no other, with import_supplier added; an
// account's event name is refused for it.
func TestSupplierEventReachesEveryGrantedOrganisation(t *testing.T) {
	e := newEnv(t)
	sup := e.supplier("BRAKED", false)
	other := e.supplier("OTHER", false)
	granted, err := e.db.CreateOrganisation(e.ctx, "Granted")
	e.must(err)
	also, err := e.db.CreateOrganisation(e.ctx, "Also granted")
	e.must(err)
	stranger, err := e.db.CreateOrganisation(e.ctx, "Stranger")
	e.must(err)
	for _, g := range []struct{ org, sup int64 }{{granted.ID, sup.ID}, {also.ID, sup.ID}, {stranger.ID, other.ID}} {
		e.must(e.db.Gorm().Exec(`INSERT INTO organisation_suppliers (organisation_id, supplier_id) VALUES (?, ?)`, g.org, g.sup).Error)
	}
	data := dataimport.SupplierPausedData{Reason: "12.50% of the last 200 creations failed (brake at 5%).", FailureRate: "12.50",
		Window: 200, TopCodes: []dataimport.TopCode{{Code: "unknown_product", Count: 20}, {Code: "invalid_mpan", Count: 5}}}
	if err := e.db.RecordSupplierEvent(e.ctx, sup.ID, dataimport.EventProcessed, data); err == nil {
		t.Fatal("an account's event was recorded as a supplier's")
	}
	e.must(e.db.RecordSupplierEvent(e.ctx, sup.ID, dataimport.EventSupplierPaused, data))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		n, err := e.db.PositionEvents(e.ctx, 1000)
		e.must(err)
		if n > 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, org := range []int64{granted.ID, also.ID} {
		got, _, err := e.db.FeedPage(e.ctx, org, 0, 10, []string{"supplier.paused-v1"}, "")
		e.must(err)
		if len(got) != 1 || got[0].Type != "supplier.paused-v1" {
			t.Fatalf("organisation %d reads %+v", org, got)
		}
		b, err := json.Marshal(got[0].Data)
		e.must(err)
		want := `{"failure_rate":"12.50","import_supplier":"BRAKED","reason":"12.50% of the last 200 creations failed (brake at 5%).","top_codes":[{"code":"unknown_product","count":20},{"code":"invalid_mpan","count":5}],"window":200}`
		if string(b) != want {
			t.Errorf("data %s\nwant %s", b, want)
		}
	}
	got, _, err := e.db.FeedPage(e.ctx, stranger.ID, 0, 10, nil, "")
	e.must(err)
	if len(got) != 0 {
		t.Errorf("an organisation not granted the supplier reads %+v", got)
	}
}
