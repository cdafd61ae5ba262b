package validate

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
)

// rowsOf returns rows [r0, r0+n) of m as a view.
func rowsOf(m blas32.General, r0, n int) blas32.General {
	return blas32.General{Rows: n, Cols: m.Cols, Stride: m.Stride, Data: m.Data[r0*m.Stride:]}
}

// TestRowsMatchWhole: Rows over blocks of uneven size, checked out of
// order and concurrently, finds the whole check's worst ratio, and a
// corrupted element in one block fails with that element's row.
func TestRowsMatchWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	m, k, n := 517, 300, 129
	a, b := cpu.Random(m, k, rng), cpu.Random(k, n, rng)
	c := cpu.New(m, n)
	cpu.Sgemm(c, a, b)
	blocks := [][2]int{{400, 117}, {0, 1}, {1, 255}, {256, 144}}
	check := func(c blas32.General) (Result, Result) {
		whole := CheckFreivalds(a, b, c, FreivaldsVectors, rand.New(rand.NewPCG(5, 5)))
		f := NewRows(b, FreivaldsVectors, rand.New(rand.NewPCG(5, 5)))
		var wg sync.WaitGroup
		for _, bl := range blocks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f.Check(rowsOf(a, bl[0], bl[1]), rowsOf(c, bl[0], bl[1]), bl[0])
			}()
		}
		wg.Wait()
		return whole, f.Result()
	}
	whole, rows := check(c)
	if !whole.OK || !rows.OK || whole.WorstRatio != rows.WorstRatio || whole.Row != rows.Row {
		t.Fatalf("correct product: whole %+v, by rows %+v", whole, rows)
	}
	c.Data[300*c.Stride+7] += 1
	whole, rows = check(c)
	if whole.OK || rows.OK || rows.Row != 300 || whole.WorstRatio != rows.WorstRatio {
		t.Fatalf("C[300][7] corrupted: whole %+v, by rows %+v", whole, rows)
	}
	if r := NewRows(b, 2, rng).Result(); !r.OK || r.Row != -1 {
		t.Errorf("nothing checked: %+v", r)
	}
}

// BenchmarkRows checks a 1024×8192 block of an 8192² product by rows (a
// panel of glmul mul's streamed 8192² product).
func BenchmarkRows(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	k, n := 8192, 8192
	bm := cpu.Random(k, n, rng)
	a, c := cpu.Random(1024, k, rng), cpu.Random(1024, n, rng)
	f := NewRows(bm, FreivaldsVectors, rng)
	b.SetBytes(4 * int64(1024*(k+n)))
	for b.Loop() {
		f.Check(a, c, 0)
	}
}

// BenchmarkRowsParts times the three passes of Freivalds' check of an
// n×n×n product by rows, each on its own so that a kernel's change shows:
// B·x (NewRows: bx4 over B, with the scans for non-finite columns and the
// column norms), A's side (PrepareA: dot4 over A) and C's side with A's
// side prepared (PreparedRows.Check: dotC over C). ns/elem is the wall
// time per element of the matrix passed over; -cpu 1 gives a kernel's
// cost per element.
func BenchmarkRowsParts(b *testing.B) {
	const n = 4096
	rng := rand.New(rand.NewPCG(3, 4))
	a, bm := cpu.Random(n, n, rng), cpu.Random(n, n, rng)
	c := cpu.New(n, n)
	for i := range c.Data { // a product's magnitude, without the O(n³) product
		c.Data[i] = float32(rng.NormFloat64() * math.Sqrt(n/9.0))
	}
	perElem := func(b *testing.B) {
		b.SetBytes(4 * n * n)
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(n*n), "ns/elem")
	}
	b.Run("part=Bx/n=4096", func(b *testing.B) {
		for b.Loop() {
			NewRows(bm, FreivaldsVectors, rand.New(rand.NewPCG(5, 6)))
		}
		perElem(b)
	})
	f := NewRows(bm, FreivaldsVectors, rand.New(rand.NewPCG(5, 6)))
	b.Run("part=A/n=4096", func(b *testing.B) {
		for b.Loop() {
			f.PrepareA(a, 0)
		}
		perElem(b)
	})
	p := f.PrepareA(a, 0)
	b.Run("part=C/n=4096", func(b *testing.B) {
		for b.Loop() {
			p.Check(c)
		}
		perElem(b)
	})
}

// TestDot4: dot4 gives dotV's sums and walk for 4 vectors, on rows of every length
// up to a few hundred (float64 sums of float32 products: equal within a
// rounding or two, where a compiler fuses a multiply-add in one and not
// the other).
func TestDot4(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for k := 0; k < 300; k += 1 + k/8 {
		row := make([]float32, k)
		m := make([]float64, 4*k)
		for p := range row {
			row[p] = float32(rng.NormFloat64())
		}
		for i := range m {
			m[i] = 2*rng.Float64() - 1
		}
		want, got := make([]float64, 4), make([]float64, 4)
		sqWant, walkWant := dotV(want, row, m)
		sqGot, walkGot := dot4(got, row, m)
		for v := range 4 {
			if d := math.Abs(got[v] - want[v]); d > 1e-12*(1+math.Abs(want[v])) {
				t.Errorf("k=%d vector %d: dot4 %v, dotV %v", k, v, got[v], want[v])
			}
		}
		if sqGot != sqWant {
			t.Errorf("k=%d: squares %v and %v", k, sqGot, sqWant)
		}
		if d := math.Abs(walkGot - walkWant); d > 1e-12*(1+walkWant) {
			t.Errorf("k=%d: walks %v and %v", k, walkGot, walkWant)
		}
	}
}

// TestDotC4: dotC4 gives dot4's projections and Σ row[p]² bit for bit
// (C's side must match what it gave through dot4), on rows of every
// length up to a few hundred, odd and even, and leaves the slices alone.
func TestDotC4(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	for k := 0; k < 300; k += 1 + k/16 {
		row := make([]float32, k)
		m := make([]float64, 4*k+4) // longer than the row: dotC4 reads 4k
		for p := range row {
			row[p] = float32(rng.NormFloat64())
		}
		for i := range m {
			m[i] = 2*rng.Float64() - 1
		}
		rowWas, mWas := append([]float32(nil), row...), append([]float64(nil), m...)
		want, got := make([]float64, 4), []float64{math.NaN(), math.NaN(), math.NaN(), math.NaN()}
		sqWant, _ := dot4(want, row, m)
		sqGot := dotC4(got, row, m)
		for v := range 4 {
			if math.Float64bits(got[v]) != math.Float64bits(want[v]) {
				t.Errorf("k=%d vector %d: dotC4 %v, dot4 %v", k, v, got[v], want[v])
			}
		}
		if math.Float64bits(sqGot) != math.Float64bits(sqWant) {
			t.Errorf("k=%d: squares %v and %v", k, sqGot, sqWant)
		}
		if !slices.Equal(row, rowWas) || !slices.Equal(m, mWas) {
			t.Errorf("k=%d: dotC4 wrote to its inputs", k)
		}
	}
}

// TestBx4: bx4 gives the general loop's sums bit for bit (NewRows with
// and without a non-finite column elsewhere takes either path, and the
// check's bound must not depend on which), on rows of odd and even
// lengths, and leaves the slices alone.
func TestBx4(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for _, n := range []int{0, 1, 2, 3, 7, 8, 300, 301} {
		row := make([]float32, n)
		x := make([]float64, 4*n+4) // longer than the row: bx4 reads 4n
		for j := range row {
			row[j] = float32(rng.NormFloat64())
		}
		for i := range x {
			x[i] = 2*rng.Float64() - 1
		}
		rowWas, xWas := append([]float32(nil), row...), append([]float64(nil), x...)
		y, ya := make([]float64, 4), make([]float64, 4)
		bx4(y, ya, row, x)
		for v := range 4 {
			var wy, wa float64 // NewRowsOn's general loop
			for j, b := range row {
				p := float64(b) * x[4*j+v]
				wy += p
				wa += math.Abs(p)
			}
			if math.Float64bits(y[v]) != math.Float64bits(wy) || math.Float64bits(ya[v]) != math.Float64bits(wa) {
				t.Errorf("n=%d vector %d: bx4 %v %v, loop %v %v", n, v, y[v], ya[v], wy, wa)
			}
		}
		if !slices.Equal(row, rowWas) || !slices.Equal(x, xWas) {
			t.Errorf("n=%d: bx4 wrote to its inputs", n)
		}
	}
}

// TestPreparedRows: A's side prepared ahead of C (PrepareA, then
// PreparedRows.Check) gives Rows.Check's Result bit for bit, over bands
// of uneven sizes that straddle the CPUs' shares of both passes (which
// split a band differently), for a right C, an element wrong at a band's
// or a share's edge, a NaN in a row of A and an Inf in a column of B
// (their elements of C non-finite, or one of them finite: missed), an
// unexplained Inf in C, a row that overflows float32 (checked in full),
// and a C wrong everywhere; with 4 vectors (dot4) and 3 (dotV).
func TestPreparedRows(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	type corrupt func(a, b, c blas32.General)
	set := func(i, j int, v float32) corrupt {
		return func(_, _, c blas32.General) { c.Data[i*c.Stride+j] = v }
	}
	for _, s := range []struct{ m, k, n int }{{700, 900, 700}, {333, 64, 2500}, {90, 5, 3}} {
		rng := rand.New(rand.NewPCG(uint64(s.m), 41))
		m, k, n := s.m, s.k, s.n
		// Bands: one row, one of uneven size, one across the middle, the rest.
		bands := [][2]int{{0, 1}, {1, m/3 - 1}, {m / 3, m/2 - m/3 + 7}, {m/2 + 7, m - m/2 - 7}}
		cases := []struct {
			name string
			bad  bool
			c    corrupt
		}{
			{"right", false, nil},
			{"element wrong in band 3", true, func(_, _, c blas32.General) { c.Data[(m/2+1)*c.Stride+n-1] += 0.5 }},
			{"first element wrong", true, func(_, _, c blas32.General) { c.Data[0] += 1 }},
			{"last row wrong", true, func(_, _, c blas32.General) { c.Data[(m-1)*c.Stride] -= 1 }},
			{"unexplained Inf", true, set(m/3, n/2, float32(math.Inf(1)))},
			{"NaN in A's row", false, func(a, b, c blas32.General) {
				a.Data[(m/3+1)*a.Stride+k/2] = float32(math.NaN())
				cpu.Sgemm(c, a, b)
			}},
			{"NaN in A's row, a finite C", true, func(a, b, c blas32.General) {
				a.Data[(m/3+1)*a.Stride+k/2] = float32(math.NaN())
				cpu.Sgemm(c, a, b)
				c.Data[(m/3+1)*c.Stride+n-1] = 1
			}},
			{"Inf in B's column, a finite C", true, func(a, b, c blas32.General) {
				b.Data[(k-1)*b.Stride+n/2] = float32(math.Inf(-1))
				cpu.Sgemm(c, a, b)
				c.Data[(m-2)*c.Stride+n/2] = 3
			}},
			{"a row overflows", false, func(a, b, c blas32.General) {
				for p := range k {
					a.Data[(m/2)*a.Stride+p] = 1e38
				}
				cpu.Sgemm(c, a, b)
			}},
			{"all wrong", true, func(_, _, c blas32.General) {
				for i := range c.Data {
					c.Data[i] = c.Data[i]*1.5 + 1
				}
			}},
		}
		for _, tc := range cases {
			for _, V := range []int{FreivaldsVectors, 3} {
				a, b := cpu.Random(m, k, rng), cpu.Random(k, n, rng)
				c := cpu.New(m, n)
				cpu.Sgemm(c, a, b)
				if tc.c != nil {
					tc.c(a, b, c)
				}
				want := NewRows(b, V, rand.New(rand.NewPCG(7, 8)))
				got := NewRowsOn(b, V, rand.New(rand.NewPCG(7, 8)), 1+V%2) // fewer goroutines than want's 4
				var prepared []*PreparedRows
				for i, bl := range bands {
					if i == 2 {
						got.SetProcs(0) // the rest on every CPU, as after the product
					}
					prepared = append(prepared, got.PrepareA(rowsOf(a, bl[0], bl[1]), bl[0]))
				}
				for i, bl := range bands {
					want.Check(rowsOf(a, bl[0], bl[1]), rowsOf(c, bl[0], bl[1]), bl[0])
					prepared[i].Check(rowsOf(c, bl[0], bl[1]))
				}
				w, g := want.Result(), got.Result()
				if !sameResult(w, g) {
					t.Errorf("%dx%dx%d, %s, %d vectors: prepared %+v, Rows.Check %+v", m, k, n, tc.name, V, g, w)
				}
				if strings.Contains(tc.name, "overflows") && k >= 64 && got.full.made() == nil { // 5 terms of 1e38 need not overflow
					t.Errorf("%dx%dx%d, %s, %d vectors: no row was checked in full", m, k, n, tc.name, V)
				}
				if w.OK == tc.bad {
					t.Errorf("%dx%dx%d, %s, %d vectors: %+v: the case does not test what it says", m, k, n, tc.name, V, w)
				}
			}
		}
	}
}

// sameResult reports whether a and b are the same bit for bit.
func sameResult(a, b Result) bool {
	bits := func(r Result) [5]uint64 {
		return [5]uint64{math.Float64bits(r.WorstRatio), math.Float64bits(r.Got), math.Float64bits(r.Want),
			math.Float64bits(r.Bound), math.Float64bits(r.RelFrobenius)}
	}
	return a.Mode == b.Mode && a.OK == b.OK && a.Vectors == b.Vectors && a.Row == b.Row && a.Col == b.Col && bits(a) == bits(b)
}
