package measure

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/validate"
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

// TestNewInputsWhateverTheThreads: the inputs of a seed are cpu.Uniform's
// streams 0 (A) and 1 (B), the same with GOMAXPROCS 1 and 4, and another
// seed gives others; progress counts A's and B's elements up to their sum.
func TestNewInputsWhateverTheThreads(t *testing.T) {
	const m, k, n = 300, 257, 190 // A and B of several blocks
	var one, four *Inputs
	var last int
	var wrong error // the callback runs on the filling goroutines: no Fatalf there
	withProcs(1, func() { one = NewInputs(m, k, n, 9) })
	withProcs(4, func() {
		four = NewInputsProgress(m, k, n, 9, func(done, total int) {
			if done <= last || total != m*k+k*n {
				wrong = fmt.Errorf("progress(%d, %d) after %d", done, total, last)
			}
			last = done
		})
	})
	if wrong != nil {
		t.Fatal(wrong)
	}
	if !same(one.A, four.A) || !same(one.B, four.B) {
		t.Fatal("GOMAXPROCS 1 and 4 made different inputs")
	}
	if !same(one.A, cpu.Uniform(m, k, 9, 0)) || !same(one.B, cpu.Uniform(k, n, 9, 1)) {
		t.Fatal("A and B are not cpu.Uniform's streams 0 and 1 of the seed")
	}
	if last != m*k+k*n {
		t.Fatalf("progress ended at %d of %d", last, m*k+k*n)
	}
	if other := NewInputs(m, k, n, 10); same(one.A, other.A) || same(one.B, other.B) {
		t.Fatal("seeds 9 and 10 made the same inputs")
	}
	if one.C.Rows != m || one.C.Cols != n || one.Seed != 9 {
		t.Fatalf("C %dx%d, seed %d", one.C.Rows, one.C.Cols, one.Seed)
	}
}

// TestFillNaN: every element of a C with a stride is NaN, on 1 goroutine
// and on 4, the stride's gaps untouched.
func TestFillNaN(t *testing.T) {
	for _, procs := range []int{1, 4} {
		for _, s := range [][2]int{{0, 3}, {1, 1}, {333, 517}} {
			withProcs(procs, func() {
				data := make([]float32, s[0]*(s[1]+2))
				fillNaN(blas32.General{Rows: s[0], Cols: s[1], Stride: s[1] + 2, Data: data})
				for i, v := range data {
					if nan := i%(s[1]+2) < s[1]; nan != math.IsNaN(float64(v)) {
						t.Fatalf("GOMAXPROCS %d, %dx%d: element %d of the data is %v", procs, s[0], s[1], i, v)
					}
				}
			})
		}
	}
}

func withProcs(procs int, f func()) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	f()
}

func same(a, b blas32.General) bool {
	return a.Rows == b.Rows && a.Cols == b.Cols && slices.Equal(a.Data, b.Data)
}

// TestCheckInBands: a check in bands of rows finds what validate.Check
// finds in one piece (the same worst element, ratio and verdict), for a
// right C and for one with an error, and reports its bands' progress.
func TestCheckInBands(t *testing.T) {
	in := NewInputs(300, 200, 250, 4)
	cpu.Sgemm(in.C, in.A, in.B)
	for _, bad := range []bool{false, true} {
		if bad {
			in.C.Data[177*250+31] += 0.01
		}
		for _, mode := range []validate.Mode{validate.Freivalds, validate.Full} {
			want := validate.Check(mode, in.A, in.B, in.C, rand.New(rand.NewPCG(in.Seed, 2)))
			last, calls := 0, 0
			got := checkInBands(mode, in, func(done, total int) {
				if done <= last || total != 300 {
					t.Fatalf("%s: progress(%d, %d) after %d", mode, done, total, last)
				}
				last, calls = done, calls+1
			}, 1, 1)
			if last != 300 || calls < 50 {
				t.Fatalf("%s: %d bands, the last ending at row %d", mode, calls, last)
			}
			if got.OK != want.OK || got.OK == bad || got.WorstRatio != want.WorstRatio || got.Row != want.Row || got.Col != want.Col {
				t.Fatalf("%s, error %v: in bands %+v, in one piece %+v", mode, bad, got, want)
			}
			if math.Abs(got.RelFrobenius-want.RelFrobenius) > 1e-9*want.RelFrobenius {
				t.Fatalf("%s: relative Frobenius error %g in bands, %g in one piece", mode, got.RelFrobenius, want.RelFrobenius)
			}
		}
	}
}

// TestStartCheck: the check started before C is made (StartCheck) finds
// what check finds after, bit for bit, with the same progress, for a
// right C and wrong ones, whether its goroutine prepared every band, was
// stopped at once by Check or was stopped by Stop, or checked C's bands
// as its blocks arrived (in column panels, as a product in panels gives
// them, the last one withheld till the end); another mode is check
// itself. Stop ends the goroutine.
func TestStartCheck(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	in := NewInputs(300, 200, 250, 4)
	right := cpu.New(300, 250)
	cpu.Sgemm(right, in.A, in.B)
	for _, bad := range []int{-1, 0, 177*250 + 31, 299*250 + 249} {
		copy(in.C.Data, right.Data)
		if bad >= 0 {
			in.C.Data[bad] += 1
		}
		var wantCalls []int
		want := checkInBands(validate.Freivalds, in, func(done, _ int) { wantCalls = append(wantCalls, done) }, 1, 1)
		for _, when := range []string{"prepared", "at once", "stopped", "arrived"} {
			fillNaN(in.C) // C is made after the check starts
			p := startCheck(validate.Freivalds, in, 1, true)
			switch when {
			case "prepared":
				for int(p.ready.Load()) < len(wantCalls) {
					runtime.Gosched()
				}
				p.Stop()
			case "stopped":
				p.Stop()
			}
			c := slices.Clone(right.Data)
			if bad >= 0 {
				c[bad] += 1
			}
			if when == "arrived" { // C written block by block, each then named
				last := arriveInPanels(p, 300, 250, 64, 100, func(b [4]int) {
					for i := b[0]; i < b[0]+b[2]; i++ {
						copy(in.C.Data[i*250+b[1]:i*250+b[1]+b[3]], c[i*250+b[1]:])
					}
				})
				for int(p.beside.Load()) < last[0]/p.rows {
					runtime.Gosched() // the goroutine checks the bands above the last block
				}
			}
			copy(in.C.Data, c)
			var calls []int
			got := p.Check(func(done, total int) {
				if total != 300 {
					t.Fatalf("progress total %d", total)
				}
				calls = append(calls, done)
			})
			if got != want || math.Float64bits(got.WorstRatio) != math.Float64bits(want.WorstRatio) || got.OK != (bad < 0) {
				t.Errorf("C[%d] wrong, %s: started %+v, after %+v", bad, when, got, want)
			}
			if !slices.Equal(calls, wantCalls) {
				t.Errorf("%s: progress %v, want %v", when, calls, wantCalls)
			}
			p.Stop() // again: a no-op
			if n := p.beside.Load(); when == "arrived" && int(n) != 256/p.rows {
				t.Errorf("C[%d] wrong: %d bands checked beside, want those of rows 0-255, %d", bad, n, 256/p.rows)
			}
		}
	}
	copy(in.C.Data, right.Data)
	full := startCheck(validate.Full, in, 1, true)
	full.Arrived(0, 0, 300, 250) // a no-op: nothing prepared beside
	if r := full.Check(nil); r.Mode != validate.Full || !r.OK {
		t.Errorf("full: %+v", r)
	}
}

// arriveInPanels calls write and then p.Arrived for each block of an m×n
// C in panels of rows×cols, column panels outer, as a product in panels
// delivers them, but the last, which it returns.
func arriveInPanels(p *PendingCheck, m, n, rows, cols int, write func(block [4]int)) (last [4]int) {
	var blocks [][4]int
	for c0 := 0; c0 < n; c0 += cols {
		for r0 := 0; r0 < m; r0 += rows {
			blocks = append(blocks, [4]int{r0, c0, min(rows, m-r0), min(cols, n-c0)})
		}
	}
	for _, b := range blocks[:len(blocks)-1] {
		write(b)
		p.Arrived(b[0], b[1], b[2], b[3])
	}
	return blocks[len(blocks)-1]
}

// TestCheckArrivedTwice: where a block of C arrives again after its band
// was checked (written again), Check checks C afresh: a C changed after
// its first arrival fails, where the check of the first would pass it.
func TestCheckArrivedTwice(t *testing.T) {
	in := NewInputs(300, 200, 250, 4)
	cpu.Sgemm(in.C, in.A, in.B)
	p := startCheck(validate.Freivalds, in, 1, true)
	last := arriveInPanels(p, 300, 250, 64, 100, func([4]int) {})
	p.Arrived(last[0], last[1], last[2], last[3])
	<-p.done // every band checked beside
	if !p.allChecked() {
		t.Fatal("the goroutine ended with bands unchecked")
	}
	in.C.Data[177*250+31] += 1
	p.Arrived(128, 0, 64, 100)
	if r := p.Check(nil); r.OK || r.Row != 177 {
		t.Fatalf("C changed after its band was checked, then arrived again: %+v, want a failure at row 177", r)
	}
}
