package measure

import (
	"testing"
	"time"
)

func TestMeanMedian(t *testing.T) {
	ds := []time.Duration{5, 1, 3, 100}
	if Mean(ds) != 27 || Median(ds) != 4 || Median(ds[:3]) != 3 {
		t.Fatalf("mean %v, median %v / %v", Mean(ds), Median(ds), Median(ds[:3]))
	}
	if ds[0] != 5 {
		t.Fatal("Median reordered its input")
	}
}

// TestSummary checks the figures a report prints, from the GL timer's
// times and from the wall clock's.
func TestSummary(t *testing.T) {
	tm := Timings{Upload: time.Second, Readback: time.Second, EndToEnd: 2 * time.Second,
		Compute: []time.Duration{2 * time.Second, 2 * time.Second}, GPU: []time.Duration{time.Second, time.Second}}
	r := Result{M: 1000, K: 1000, N: 1000, Timings: tm, Times: tm.GPU, Source: "gl-timer"}
	s := r.Summary()
	// 2·10⁹ flop in 1 s of GPU time; end to end 2 s pipelined, 2 s less
	// than the stages 1 + 2 + 1 s (wall compute) one after another.
	if s.TimingSource != "gl-timer" || s.GFLOPSMean != 2 || s.GFLOPSEndToEnd != 1 || s.WallMeanMS != 2000 || s.OverlapMS != 2000 {
		t.Fatalf("%+v", s)
	}
	r.Times, r.Source = tm.Compute, "wall"
	if s := r.Summary(); s.TimingSource != "wall" || s.GFLOPSMean != 1 || s.KernelMinMS != 2000 {
		t.Fatalf("%+v", s)
	}
	// A pipelined product longer than its stages one after another
	// overlapped nothing: 0, not a negative overlap (issue 23).
	r.Timings.EndToEnd = 5 * time.Second
	if s := r.Summary(); s.OverlapMS != 0 {
		t.Errorf("overlap %v ms for a pipelined pass longer than its stages", s.OverlapMS)
	}
	if GFLOPS(1e9, 0) != 0 {
		t.Error("GFLOPS of a zero time is not 0")
	}
}
