package httpapi_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// BenchmarkStatusRead is one authenticated status read through the router
// and Postgres: the request partners poll most.
func BenchmarkStatusRead(b *testing.B) {
	st := testutil.NewStack(b)
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	sup, _ := st.DB.SupplierByCode(context.Background(), "DEMO_ENERGY")
	bulkStage(b, st, sup.ID, 1000)
	path := statusPath("DEMO_ENERGY", "EXT-000500")
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(http.MethodGet, st.Server.URL+path, nil)
			req.Header.Set("Authorization", "Token "+ten.Token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatalf("status read: %v", err)
			}
			resp.Body.Close()
		}
	})
}

// BenchmarkStage is one staging request (decode, validate, upsert) through
// the router.
func BenchmarkStage(b *testing.B) {
	st := testutil.NewStack(b)
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		body := accountB(b, "EXT-B"+itoa(i))
		if r := st.As(ten.Token, http.MethodPost, stagePath, body); r.Status != http.StatusCreated {
			b.Fatalf("stage: %d %s", r.Status, r.Body)
		}
	}
}

// BenchmarkStageParallel is staging from 32 partner clients at once, where
// concurrent upserts share statements and commits.
func BenchmarkStageParallel(b *testing.B) {
	st := testutil.NewStack(b)
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(16) // × GOMAXPROCS clients
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			body := accountB(b, "EXT-P"+itoa(int(n.Add(1))))
			if r := st.As(ten.Token, http.MethodPost, stagePath, body); r.Status != http.StatusCreated {
				b.Errorf("stage: %d %s", r.Status, r.Body)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}
