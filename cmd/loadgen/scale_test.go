package main

import (
	"math"
	"testing"
)

// TestTenthRates: accounts/s per tenth of the accounts, timed from the first
// finished account, so an upload before creation does not count.
func TestTenthRates(t *testing.T) {
	var steady, slowing []scaleSample
	// 5 s of upload, then 10 accounts/s for 100 s.
	for s := 0; s <= 105; s++ {
		done := int64(max(0, s-5) * 10)
		steady = append(steady, scaleSample{T: float64(s), Done: done})
	}
	// 20/s for the first 500 accounts, then 10/s.
	for s, done := 0, int64(0); done < 1000; s++ {
		slowing = append(slowing, scaleSample{T: float64(s), Done: done})
		if done < 500 {
			done += 20
		} else {
			done += 10
		}
	}
	slowing = append(slowing, scaleSample{T: float64(len(slowing)), Done: 1000})
	for _, tc := range []struct {
		name    string
		samples []scaleSample
		want    []float64
	}{
		{"steady", steady, []float64{10, 10, 10, 10, 10, 10, 10, 10, 10, 10}},
		{"slowing", slowing, []float64{20, 20, 20, 20, 20, 10, 10, 10, 10, 10}},
	} {
		got := tenthRates(tc.samples, 1000)
		if len(got) != 10 {
			t.Fatalf("%s: %v", tc.name, got)
		}
		for i := range got {
			// The first tenth starts at the first account, 1/rate after the
			// first second of creation.
			if math.Abs(got[i]-tc.want[i]) > 0.25 {
				t.Errorf("%s: tenth %d = %.2f, want %.0f (all %v)", tc.name, i+1, got[i], tc.want[i], got)
			}
		}
	}
	if got := tenthRates(nil, 1000); got != nil {
		t.Errorf("no samples: %v", got)
	}
}

// TestPhaseP99s: the per-second status p99s split at the last upload's
// acceptance, seconds without reads left out.
func TestPhaseP99s(t *testing.T) {
	res := &scaleResult{UploadSeconds: 10}
	for i := range 30 {
		s := scaleSample{T: float64(i), StatusN: 200, StatusP99: float64(i)}
		if i == 3 || i == 25 {
			s.StatusN, s.StatusP99 = 0, 1000 // no reads: not a second of evidence
		}
		res.Samples = append(res.Samples, s)
	}
	up, after, ok := phaseP99s(res)
	// While uploading: 0,1,2,4,...,9 (9 seconds); after: 10..29 without 25 (19).
	if !ok || up != [2]float64{5, 9} || after != [2]float64{19, 28} {
		t.Fatalf("phaseP99s = %v, %v, %v; want [5 9], [19 28], true", up, after, ok)
	}
	if _, _, ok := phaseP99s(&scaleResult{UploadSeconds: 10}); ok {
		t.Fatal("a run without samples has phases")
	}
}
