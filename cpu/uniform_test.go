package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
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

// TestFillUniformMatchesReference: FillUniform and FillUniform64 give
// refFill's values bit for bit, and leave the stride gaps alone, for
// matrices smaller than a block, rows of odd and even lengths that
// straddle the blocks' edges, compact and through strides, with 1 and 3
// goroutines.
func TestFillUniformMatchesReference(t *testing.T) {
	shapes := [][2]int{
		{0, 5}, {5, 0}, {1, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 5}, {2, 3}, {3, 7}, {17, 31},
		{1, UniformBlock - 1}, {1, UniformBlock}, {1, UniformBlock + 1}, {2, UniformBlock + 1},
		{301, 517}, {3, 70001}, {UniformBlock + 1, 1}, {256, 256}, {255, 257}, {129, 1025},
	}
	for _, s := range shapes {
		for _, gap := range []int{0, 1, 4} {
			rows, cols, stride := s[0], s[1], s[1]+gap
			want32, want64 := refFill(rows, cols, stride, 42, 3)
			for _, procs := range []int{1, 3} {
				got32 := blas32.General{Rows: rows, Cols: cols, Stride: stride, Data: nan32(len(want32.Data))}
				got64 := blas64.General{Rows: rows, Cols: cols, Stride: stride, Data: nan64(len(want64.Data))}
				withProcs(procs, func() {
					FillUniform(got32, 42, 3, nil)
					FillUniform64(got64, 42, 3, nil)
				})
				for k := range want32.Data {
					if math.Float32bits(got32.Data[k]) != math.Float32bits(want32.Data[k]) {
						t.Fatalf("%dx%d stride %d, %d goroutines: float32 Data[%d] = %v, want %v",
							rows, cols, stride, procs, k, got32.Data[k], want32.Data[k])
					}
					if math.Float64bits(got64.Data[k]) != math.Float64bits(want64.Data[k]) {
						t.Fatalf("%dx%d stride %d, %d goroutines: float64 Data[%d] = %v, want %v",
							rows, cols, stride, procs, k, got64.Data[k], want64.Data[k])
					}
				}
			}
		}
	}
}

// TestPCGMatchesRand: pcg's draws, a step or two at a time, are
// math/rand/v2's PCG's, for seeds with high bits, low bits and all bits.
func TestPCGMatchesRand(t *testing.T) {
	for _, seed := range [][2]uint64{{0, 0}, {1, 0}, {0, 1}, {1 << 63, 1 << 63}, {^uint64(0), ^uint64(0)}, {42, splitMix(42)}} {
		p, r := pcg{seed[0], seed[1]}, rand.NewPCG(seed[0], seed[1])
		for k := range 1000 {
			if k%3 == 0 {
				a, b := p.next(), p.next2()
				if u, v := a.out(), b.out(); u != r.Uint64() || v != r.Uint64() {
					t.Fatalf("seed %#x: draws %d and %d (a step of two) differ from rand.PCG's", seed, k, k+1)
				}
				p = b
				continue
			}
			if p = p.next(); p.out() != r.Uint64() {
				t.Fatalf("seed %#x: draw %d differs from rand.PCG's", seed, k)
			}
		}
	}
}

// TestFillUniformGolden: a few elements of a few matrices keep the values
// FillUniform and FillUniform64 gave when first written, so that neither
// they nor refFill can drift.
func TestFillUniformGolden(t *testing.T) {
	for _, g := range []struct {
		rows, cols   int
		seed, stream uint64
		e            int
		bits32       uint32
		bits64       uint64
	}{
		{301, 517, 42, 0, 0, 0xbf3679b9, 0xbfe6cf3722506e55},
		{301, 517, 42, 0, 1, 0xbd941b98, 0xbfd6b80274677a3a},
		{301, 517, 42, 0, 516, 0x3f200eab, 0x3fea648d37821209},
		{301, 517, 42, 0, 517, 0x3e8cb90a, 0x3fcf5e13b4b9abdc},
		{301, 517, 42, 0, 65535, 0x3f1fdd67, 0x3fe54c1b49a9b9b1},
		{301, 517, 42, 0, 65536, 0x3f07c6c9, 0x3fe0f8d908037fd9},
		{301, 517, 42, 0, 65537, 0xbf3fe401, 0x3fdc11c1c4c33dba},
		{301, 517, 42, 0, 131073, 0xbebe5dc6, 0x3fb0c276248d0358},
		{301, 517, 42, 0, 155616, 0x3c2aa440, 0xbfee0a09978bfbb5},
		{1, 1, 1, 1, 0, 0xbf0e2c53, 0xbfe1c58a792a82ab},
		{3, 70001, 7, 1, 0, 0x3f3fb60d, 0x3fe7f6c18910d2dd},
		{3, 70001, 7, 1, 1, 0xbf377969, 0xbfe374178e27e813},
		{3, 70001, 7, 1, 516, 0x3f7e5925, 0x3fc3d06aa45b64b4},
		{3, 70001, 7, 1, 517, 0xbf0d4a27, 0xbfc96ce593f73d3c},
		{3, 70001, 7, 1, 65535, 0xbece7fc2, 0xbfbbb68e8a1f87d8},
		{3, 70001, 7, 1, 65536, 0x3f6e8109, 0x3fedd02133de6ea3},
		{3, 70001, 7, 1, 65537, 0x3f1ef375, 0xbfe9d4ad41825cab},
		{3, 70001, 7, 1, 131073, 0x3f6c3a8f, 0x3fedc849f5831ccf},
		{3, 70001, 7, 1, 210002, 0xbf5fdab3, 0x3fe6b68ec87fb943},
	} {
		m32 := Uniform(g.rows, g.cols, g.seed, g.stream)
		m64 := blas64.General{Rows: g.rows, Cols: g.cols, Stride: g.cols, Data: make([]float64, g.rows*g.cols)}
		FillUniform64(m64, g.seed, g.stream, nil)
		r32, r64 := refFill(g.rows, g.cols, g.cols, g.seed, g.stream)
		for _, got := range []uint32{math.Float32bits(m32.Data[g.e]), math.Float32bits(r32.Data[g.e])} {
			if got != g.bits32 {
				t.Errorf("%dx%d seed %d stream %d: float32 element %d is %#08x, want %#08x", g.rows, g.cols, g.seed, g.stream, g.e, got, g.bits32)
			}
		}
		for _, got := range []uint64{math.Float64bits(m64.Data[g.e]), math.Float64bits(r64.Data[g.e])} {
			if got != g.bits64 {
				t.Errorf("%dx%d seed %d stream %d: float64 element %d is %#016x, want %#016x", g.rows, g.cols, g.seed, g.stream, g.e, got, g.bits64)
			}
		}
	}
}

// refFill returns rows×cols matrices of the given stride, float32 and
// float64, filled one block after another by refFillBlock and
// refFillBlock64, their stride gaps NaN.
func refFill(rows, cols, stride int, seed, stream uint64) (blas32.General, blas64.General) {
	n := 0
	if rows > 0 {
		n = (rows-1)*stride + cols
	}
	m32 := blas32.General{Rows: rows, Cols: cols, Stride: stride, Data: nan32(n)}
	m64 := blas64.General{Rows: rows, Cols: cols, Stride: stride, Data: nan64(n)}
	base := splitMix(splitMix(seed) ^ stream)
	total := rows * cols
	for b := 0; b*UniformBlock < total; b++ {
		lo, hi := b*UniformBlock, min(total, (b+1)*UniformBlock)
		refFillBlock(m32, lo, hi, base, uint64(b))
		refFillBlock64(m64, lo, hi, base, uint64(b))
	}
	return m32, m64
}

func nan32(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(math.NaN())
	}
	return s
}

func nan64(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}

// refFillBlock is fillBlock as first written, drawing from math/rand/v2's
// PCG element by element: the reference for its values.
func refFillBlock(m blas32.General, lo, hi int, base, block uint64) {
	s1 := splitMix(base ^ block)
	pcg := rand.NewPCG(s1, splitMix(s1))
	var spare uint64 // the second value of the last draw
	haveSpare := false
	for e := lo; e < hi; {
		i, j := e/m.Cols, e%m.Cols
		row := m.Data[i*m.Stride+j : i*m.Stride+min(m.Cols, j+hi-e)]
		k := 0
		if haveSpare && len(row) > 0 {
			row[0], haveSpare = value(spare), false
			k = 1
		}
		for ; k+1 < len(row); k += 2 {
			u := pcg.Uint64()
			row[k], row[k+1] = value(u>>40), value(u>>16&(1<<24-1))
		}
		if k < len(row) {
			u := pcg.Uint64()
			row[k], spare, haveSpare = value(u>>40), u>>16&(1<<24-1), true
		}
		e += len(row)
	}
}

// refFillBlock64 is fillBlock64 as first written: the reference for its
// values.
func refFillBlock64(m blas64.General, lo, hi int, base, block uint64) {
	s1 := splitMix(base ^ block)
	pcg := rand.NewPCG(s1, splitMix(s1))
	for e := lo; e < hi; {
		i, j := e/m.Cols, e%m.Cols
		row := m.Data[i*m.Stride+j : i*m.Stride+min(m.Cols, j+hi-e)]
		for k := range row {
			row[k] = value64(pcg.Uint64() >> 11)
		}
		e += len(row)
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

// TestFillUniformProgress: the calls' done only grows and ends at total,
// and every element before it is filled when it is called (no value is
// 0, and m starts zeroed), whatever the goroutines. (The callback runs on
// the filling goroutines: it records what is wrong, for the test's.)
func TestFillUniformProgress(t *testing.T) {
	for _, procs := range []int{1, 4, 16} {
		withProcs(procs, func() {
			m := New(1000, 1000) // 16 blocks
			last, calls := -1, 0
			var wrong []string
			FillUniform(m, 1, 0, func(done, total int) {
				if done <= last || total != 1000*1000 {
					wrong = append(wrong, fmt.Sprintf("progress(%d, %d) after %d", done, total, last))
				}
				for e := max(0, last); e < done; e++ {
					if m.Data[e] == 0 {
						wrong = append(wrong, fmt.Sprintf("progress(%d, %d) with element %d not filled", done, total, e))
						break
					}
				}
				last, calls = done, calls+1
			})
			if len(wrong) > 0 {
				t.Fatalf("GOMAXPROCS %d: %s", procs, strings.Join(wrong, "; "))
			}
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
