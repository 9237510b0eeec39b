package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gridshift/dataimport/pkg/testutil"
)

// streamList fetches the whole list and reports the body size and the peak
// heap growth of this process (the API runs in it) while it streamed.
func streamList(tb testing.TB, st *testutil.Stack, token string) (bodyBytes int64, peakGrowth uint64) {
	tb.Helper()
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > base && m.HeapAlloc-base > peak.Load() {
				peak.Store(m.HeapAlloc - base)
			}
		}
	}()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet,
		st.Server.URL+"/v1/data-import/all-account-import-processes/DEMO_ENERGY/", nil)
	req.Header.Set("Authorization", "Token "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	close(stop)
	<-done
	if err != nil || resp.StatusCode != http.StatusOK {
		tb.Fatalf("list: %d %v", resp.StatusCode, err)
	}
	return n, peak.Load()
}

// The list streams: the API's heap does not grow with the list. If the
// handler buffered the rows or the body, the growth would exceed the body.
func TestListStreamsInConstantMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("inserts 100k rows")
	}
	st := testutil.NewStack(t)
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	sup, _ := st.DB.SupplierByCode(context.Background(), "DEMO_ENERGY")
	bulkStage(t, st, sup.ID, 100_000)
	body, peak := streamList(t, st, ten.Token)
	t.Logf("100k rows: body %.1f MB, peak heap growth %.1f MB", float64(body)/1e6, float64(peak)/1e6)
	if body < 8_000_000 {
		t.Fatalf("body %d bytes is too small for 100k rows", body)
	}
	// Buffering the rows or the body would grow the heap by more than the
	// body itself; streaming stays far below (typically 2 MB here).
	if peak > uint64(body)/2 {
		t.Fatalf("heap grew %d bytes while streaming a %d-byte list", peak, body)
	}
}

// BenchmarkListStream reports allocation per row and peak heap growth.
func BenchmarkListStream(b *testing.B) {
	st := testutil.NewStack(b)
	st.Supplier("DEMO_ENERGY")
	ten := st.Tenant("Demo Partner", "DEMO_ENERGY")
	sup, _ := st.DB.SupplierByCode(context.Background(), "DEMO_ENERGY")
	const rows = 100_000
	bulkStage(b, st, sup.ID, rows)
	b.ResetTimer()
	var peak uint64
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < b.N; i++ {
		_, p := streamList(b, st, ten.Token)
		peak = max(peak, p)
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N*rows), "alloc-B/row")
	b.ReportMetric(float64(peak)/1e6, "peak-heap-MB")
	b.ReportMetric(float64(b.N*rows)/b.Elapsed().Seconds(), "rows/s")
}
