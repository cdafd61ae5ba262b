package cpu

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
)

// withProcs runs f with GOMAXPROCS set to procs.
func withProcs(procs int, f func()) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
	f()
}

// TestFillUniformWhateverTheThreads fills matrices of several blocks,
// rows that straddle the blocks' edges (odd lengths too), with 1 and 4
// goroutines and through a view with a stride: the same values.
func TestFillUniformWhateverTheThreads(t *testing.T) {
	for _, s := range [][2]int{{301, 517}, {3, 70001}, {UniformBlock + 1, 1}, {1, 1}, {0, 5}} {
		var one, four blas32.General
		withProcs(1, func() { one = Uniform(s[0], s[1], 42, 0) })
		withProcs(4, func() { four = Uniform(s[0], s[1], 42, 0) })
		if !equal(one, four) {
			t.Fatalf("%dx%d: GOMAXPROCS 1 and 4 gave different values", s[0], s[1])
		}
		wide := New(s[0], s[1]+3)
		view := blas32.General{Rows: s[0], Cols: s[1], Stride: wide.Stride, Data: wide.Data}
		withProcs(4, func() { FillUniform(view, 42, 0, nil) })
		for i := 0; i < s[0]; i++ {
			got := view.Data[i*view.Stride : i*view.Stride+s[1]]
			want := one.Data[i*s[1] : (i+1)*s[1]]
			if !equal(blas32.General{Rows: 1, Cols: s[1], Data: got}, blas32.General{Rows: 1, Cols: s[1], Data: want}) {
				t.Fatalf("%dx%d: row %d through a stride differs", s[0], s[1], i)
			}
			for _, v := range wide.Data[i*wide.Stride+s[1] : (i+1)*wide.Stride] {
				if v != 0 {
					t.Fatalf("%dx%d: stride gap of row %d written", s[0], s[1], i)
				}
			}
		}
	}
}

// TestFillUniformSeedsStreamsBlocks: another seed, another stream, or the
// next block gives other values.
func TestFillUniformSeedsStreamsBlocks(t *testing.T) {
	n := 2 * UniformBlock
	base := Uniform(1, n, 7, 0)
	for name, other := range map[string]blas32.General{"seed": Uniform(1, n, 8, 0), "stream": Uniform(1, n, 7, 1)} {
		if same := countSame(base.Data, other.Data); same > n/1000 {
			t.Errorf("another %s: %d of %d values the same", name, same, n)
		}
	}
	if same := countSame(base.Data[:UniformBlock], base.Data[UniformBlock:]); same > UniformBlock/1000 {
		t.Errorf("blocks 0 and 1: %d of %d values the same", same, UniformBlock)
	}
}

func countSame(a, b []float32) int {
	same := 0
	for i := range a {
		if a[i] == b[i] {
			same++
		}
	}
	return same
}

// TestFillUniformDistribution: 4M values in (-1, 1), odd multiples of
// 2⁻²⁴, with the mean, variance and histogram of the uniform
// distribution on [-1, 1), within 5 standard errors.
func TestFillUniformDistribution(t *testing.T) {
	m := Uniform(2048, 2048, 3, 0)
	const bins = 16
	var sum, sum2 float64
	var hist [bins]int
	for _, v := range m.Data {
		f := float64(v)
		if !(f > -1 && f < 1) || math.Mod(math.Ldexp(f, 24), 2) == 0 {
			t.Fatalf("value %v is not an odd multiple of 2⁻²⁴ in (-1, 1)", v)
		}
		sum += f
		sum2 += f * f
		hist[int((f+1)/2*bins)]++
	}
	n := float64(len(m.Data))
	mean, variance := sum/n, sum2/n-(sum/n)*(sum/n)
	if se := math.Sqrt(1.0 / 3 / n); math.Abs(mean) > 5*se {
		t.Errorf("mean %.3g, want 0 within %.3g", mean, 5*se)
	}
	if se := math.Sqrt((1.0/5 - 1.0/9) / n); math.Abs(variance-1.0/3) > 5*se {
		t.Errorf("variance %.6f, want 1/3 within %.3g", variance, 5*se)
	}
	p := 1.0 / bins
	for i, c := range hist {
		if se := math.Sqrt(n * p * (1 - p)); math.Abs(float64(c)-n*p) > 5*se {
			t.Errorf("bin %d of %d: %d values, want %.0f within %.0f", i, bins, c, n*p, 5*se)
		}
	}
}

// TestFillUniformProgress: the calls' done only grows and ends at total.
func TestFillUniformProgress(t *testing.T) {
	for _, procs := range []int{1, 4} {
		withProcs(procs, func() {
			m := New(1000, 1000) // 16 blocks
			last, calls := -1, 0
			FillUniform(m, 1, 0, func(done, total int) {
				if done <= last || total != 1000*1000 {
					t.Fatalf("GOMAXPROCS %d: progress(%d, %d) after %d", procs, done, total, last)
				}
				last, calls = done, calls+1
			})
			if last != 1000*1000 || calls > 16 {
				t.Fatalf("GOMAXPROCS %d: %d calls, the last at %d", procs, calls, last)
			}
		})
	}
}

func TestFillUniformBadStridePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a stride under the columns")
		}
	}()
	FillUniform(blas32.General{Rows: 2, Cols: 3, Stride: 2, Data: make([]float32, 6)}, 1, 0, nil)
}

// BenchmarkFillUniform fills a 4096² matrix (touched once before), compact
// and through a stride of 4099, in float32 and float64, and reports ns per
// element; run it with -cpu 1,2 for one goroutine and two. Fill, serial,
// is there to compare.
func BenchmarkFillUniform(b *testing.B) {
	const n, stride = 4096, 4099
	perElement := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(n*n), "ns/element")
	}
	m := New(n, n)
	b.Run("Fill", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 1))
		for b.Loop() {
			Fill(m, rng)
		}
		perElement(b)
	})
	for _, layout := range []string{"compact", "strided"} {
		s := n
		if layout == "strided" {
			s = stride
		}
		m32 := blas32.General{Rows: n, Cols: n, Stride: s, Data: make([]float32, (n-1)*s+n)}
		m64 := blas64.General{Rows: n, Cols: n, Stride: s, Data: make([]float64, (n-1)*s+n)}
		FillUniform(m32, 1, 0, nil)
		FillUniform64(m64, 1, 0, nil)
		b.Run("type=float32/layout="+layout, func(b *testing.B) {
			for b.Loop() {
				FillUniform(m32, 1, 0, nil)
			}
			perElement(b)
		})
		b.Run("type=float64/layout="+layout, func(b *testing.B) {
			for b.Loop() {
				FillUniform64(m64, 1, 0, nil)
			}
			perElement(b)
		})
	}
}

// TestFillUniform64: float64 values are odd multiples of 2⁻⁵³ in (-1, 1),
// the same whatever the threads, with the uniform distribution's mean
// and variance within 5 standard errors, and most of them need more than
// float32's 24 bits (a test of float64 arithmetic on float32 values
// would be a kinder one).
func TestFillUniform64(t *testing.T) {
	var one, four blas64.General
	for _, p := range []struct {
		procs int
		m     *blas64.General
	}{{1, &one}, {4, &four}} {
		withProcs(p.procs, func() {
			*p.m = blas64.General{Rows: 700, Cols: 300, Stride: 301, Data: make([]float64, 700*301)}
			FillUniform64(*p.m, 5, 1, nil)
		})
	}
	var sum, sum2 float64
	wide := 0
	for i := range 700 {
		for j := range 300 {
			f := one.Data[i*301+j]
			if f != four.Data[i*301+j] {
				t.Fatalf("[%d][%d]: %v with 1 thread, %v with 4", i, j, f, four.Data[i*301+j])
			}
			if !(f > -1 && f < 1) || math.Mod(math.Ldexp(f, 53), 2) != 1 && math.Mod(math.Ldexp(f, 53), 2) != -1 {
				t.Fatalf("value %v is not an odd multiple of 2⁻⁵³ in (-1, 1)", f)
			}
			if float64(float32(f)) != f {
				wide++
			}
			sum += f
			sum2 += f * f
		}
		if one.Data[i*301+300] != 0 {
			t.Fatalf("row %d's stride gap written", i)
		}
	}
	n := float64(700 * 300)
	mean, variance := sum/n, sum2/n-(sum/n)*(sum/n)
	if se := math.Sqrt(1.0 / 3 / n); math.Abs(mean) > 5*se {
		t.Errorf("mean %.3g, want 0 within %.3g", mean, 5*se)
	}
	if se := math.Sqrt((1.0/5 - 1.0/9) / n); math.Abs(variance-1.0/3) > 5*se {
		t.Errorf("variance %.6f, want 1/3 within %.3g", variance, 5*se)
	}
	if wide < int(0.99*n) {
		t.Errorf("%d of %.0f values are not float32 values, want nearly all", wide, n)
	}
}
