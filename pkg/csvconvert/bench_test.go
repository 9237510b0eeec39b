package csvconvert

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// writeExportSet writes n accounts in the example export's layout (sorted by
// account number): per account 2 customers, 1 premise, 2 meters (one with
// two register rows), 3 agreements and 1 note: 11 rows over six files.
func writeExportSet(tb testing.TB, dir string, n int) (rows int) {
	tb.Helper()
	files := map[string]string{
		"accounts.csv":   "ACCOUNT_NO;ACC_TYPE;BILL_NAME;BILL_ADDR1;BILL_ADDR2;BILL_TOWN;BILL_POSTCODE;BILL_EMAIL;PAPERLESS;CHANNEL;SUBCHANNEL;SALE_DATE;LAST_BILL_DATE;BALANCE;TARIFF_GROUP;REGION_CODE\n",
		"customers.csv":  "ACCOUNT_NO;CUST_SEQ;TITLE;FIRST_NAME;LAST_NAME;EMAIL;MOBILE;PHONE;BIRTH_DATE;SMS_OK;MARKETING_OK;PSR_CONSENT\n",
		"premises.csv":   "ACCOUNT_NO;PREMISE_ID;ADDR1;ADDR2;TOWN;POSTCODE;MOVE_IN\n",
		"meters.csv":     "ACCOUNT_NO;PREMISE_ID;MPXN;FUEL;REGISTER;SUPPLY_START;SUPPLY_END\n",
		"agreements.csv": "ACCOUNT_NO;MPXN;TARIFF;VALID_FROM;VALID_TO\n",
		"notes.csv":      "ACCOUNT_NO;CREATED;TEXT;PINNED\n",
	}
	ws := map[string]*bufio.Writer{}
	for name, header := range files {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { _ = f.Close() })
		w := bufio.NewWriter(f)
		w.WriteString(header)
		ws[name] = w
	}
	for i := range n {
		no := 100000 + i
		fmt.Fprintf(ws["accounts.csv"], "%d;P;Mrs J Okafor;%d Mill Lane;;Leeds;LS6 2AB;j.%d@example.co.uk;Y;D;;03.05.2021;00.00.0000;1.%03d,%02d;STANDARD;NE\n", no, i%900+1, no, i%1000, i%100)
		fmt.Fprintf(ws["customers.csv"], "%d;1;Mrs;Joy;Okafor;j.%d@example.co.uk;07400 123456;;12.03.1971;Y;N;N\n%d;2;Mr;Sam;Okafor;;;0113 496 0000;00.00.0000;N;N;J\n", no, no, no)
		fmt.Fprintf(ws["premises.csv"], "%d;P-%d;%d Mill Lane;;Leeds;LS6 2AB;03.05.2021\n", no, no, i%900+1)
		fmt.Fprintf(ws["meters.csv"], "%d;P-%d;1%012d;E;DAY;03.05.2021;00.00.0000\n%d;P-%d;1%012d;E;NIGHT;03.05.2021;00.00.0000\n%d;P-%d;9%09d;G;1;03.05.2021;00.00.0000\n",
			no, no, no, no, no, no, no, no, no)
		fmt.Fprintf(ws["agreements.csv"], "%d;1%012d;FIX-12M-21;03.05.2021;02.05.2022\n%d;1%012d;VAR-STD;03.05.2022;31.12.9999\n%d;9%09d;VAR-STD;03.05.2021;31.12.9999\n",
			no, no, no, no, no, no)
		fmt.Fprintf(ws["notes.csv"], "%d;12.03.2024 10:15;Migrated from the legacy system.;N\n", no)
		rows += 11
	}
	for _, w := range ws {
		if err := w.Flush(); err != nil {
			tb.Fatal(err)
		}
	}
	return rows
}

// peakHeap samples the live heap until stopped; it returns the highest
// value seen, in bytes.
func peakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak.Load() }
}

// BenchmarkConvert converts generated exports of the example's layout with
// the example mapping. Reported: input rows and accounts per second, and
// the peak live heap during the run, which must not grow with the number of
// accounts (compare the two sizes).
//
//	go test -run '^$' -bench Convert -benchtime 1x ./pkg/csvconvert/
func BenchmarkConvert(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("accounts=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			rows := writeExportSet(b, dir, n)
			m, _ := exampleFiles(b, nil)
			var peak uint64
			b.ResetTimer()
			for b.Loop() {
				var inputs []Input
				for _, e := range m.Entities() {
					f, err := os.Open(filepath.Join(dir, e.File))
					if err != nil {
						b.Fatal(err)
					}
					inputs = append(inputs, Input{Entity: e.Entity, Name: e.File, R: f})
					defer f.Close()
				}
				runtime.GC()
				stop := peakHeap()
				out := bufio.NewWriter(io.Discard)
				st, err := m.Convert(b.Context(), inputs, func(a Account) error {
					_, err := out.Write(a.JSON)
					return err
				}, func(e RowError) { b.Fatalf("row error: %s", e) })
				if p := stop(); p > peak {
					peak = p
				}
				if err != nil || st.Converted != n {
					b.Fatalf("converted %d of %d: %v", st.Converted, n, err)
				}
			}
			secs := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(float64(rows)/secs, "rows/s")
			b.ReportMetric(float64(n)/secs, "accounts/s")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		})
	}
}
