package validate

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas/blas64"
)

// float32Strength is the float64 check with float32's unit roundoff and
// smallest normal: the tolerance a check of float32 strength would give a
// float64 product, to show what it lets through.
var float32Strength = precision{u: u32, tiny: tiny}

// float64Product is C = A·B as the float64 kernel makes it: each
// element's terms fused into a float64 accumulator in order (fma, as
// dfast.comp does), or in slices of K summed after in float64 (Mul64's
// slices of K where a driver caps a loop, as on llvmpipe).
func float64Product(a, b blas64.General, slices int) blas64.General {
	c := blas64.General{Rows: a.Rows, Cols: b.Cols, Stride: b.Cols, Data: make([]float64, a.Rows*b.Cols)}
	k := a.Cols
	for i := range a.Rows {
		for j := range b.Cols {
			var sum float64
			for s := range slices {
				var acc float64
				for l := s * k / slices; l < (s+1)*k/slices; l++ {
					acc = math.FMA(a.Data[i*a.Stride+l], b.Data[l*b.Stride+j], acc)
				}
				sum += acc
			}
			c.Data[i*c.Stride+j] = sum
		}
	}
	return c
}

// randomMatrix64 is r×c uniform on [-1, 1) or [0, 1), every value with
// float64's 53 bits: products of float32 values would be exact in
// float64, and their sums kinder than a real kernel's.
func randomMatrix64(r, c int, positive bool, rng *rand.Rand) blas64.General {
	m := blas64.General{Rows: r, Cols: c, Stride: c, Data: make([]float64, r*c)}
	for i := range m.Data {
		if positive {
			m.Data[i] = rng.Float64()
		} else {
			m.Data[i] = 2*rng.Float64() - 1
		}
	}
	return m
}

func scaled64(c blas64.General, f float64) blas64.General {
	w := c
	w.Data = make([]float64, len(c.Data))
	for i, v := range c.Data {
		w.Data[i] = v * f
	}
	return w
}

// check64 runs the float64 check of mode with the arithmetic pr.
func (pr precision) check64(mode Mode, a, b, c blas64.General) Result {
	if mode == Full {
		return pr.checkFull(a, b, c)
	}
	return pr.checkFreivalds(a, b, c, FreivaldsVectors, rand.New(rand.NewPCG(1, 2)))
}

// TestFloat64WrongFails is the float64 check's proof, as
// TestWrongByOnePercentFails is the float32 one's: at every K from 1 to
// 2²⁴ a float64 product made as the kernel makes it, in order or in
// slices of K, passes both modes with room to spare, and the same product
// wrong by 10⁻¹⁰ (relative: a millionth of what float32 can tell) fails
// both, where a tolerance of float32 strength (u = 2⁻²⁴) passes it.
func TestFloat64WrongFails(t *testing.T) {
	for _, c := range []struct{ m, k, n int }{{16, 1, 16}, {16, 4097, 16}, {16, 65536, 16}, {4, 1 << 20, 4}, {2, 1 << 24, 2}} {
		if c.k > 1<<20 && testing.Short() || c.k > 1<<16 && raceOn {
			continue
		}
		rng := rand.New(rand.NewPCG(uint64(c.k), 45))
		a, b := randomMatrix64(c.m, c.k, false, rng), randomMatrix64(c.k, c.n, false, rng)
		for _, slices := range []int{1, 4} {
			if slices > 1 && c.k > 1<<20 {
				continue
			}
			right := float64Product(a, b, slices)
			for _, mode := range []Mode{Full, Freivalds} {
				t.Run(fmt.Sprintf("%dx%dx%d/slices=%d/%s", c.m, c.k, c.n, slices, mode), func(t *testing.T) {
					if r := float64Arithmetic.check64(mode, a, b, right); !r.OK || c.k > 1 && r.WorstRatio > 0.1 {
						t.Errorf("right product: %v (worst %.3g of the tolerance: want under 0.1)", r, r.WorstRatio)
					}
					for _, f := range []float64{1 + 1e-10, 1 - 1e-10} {
						wrong := scaled64(right, f)
						if r := float64Arithmetic.check64(mode, a, b, wrong); r.OK {
							t.Errorf("C×(1%+.0e) accepted: %v", f-1, r)
						}
						if r := float32Strength.check64(mode, a, b, wrong); !r.OK {
							t.Errorf("C×(1%+.0e) refused by a tolerance of float32 strength (%v): the test shows nothing", f-1, r)
						}
					}
				})
			}
		}
	}
}

// TestFloat64PositiveData: data of one sign, which do not cancel, pass
// and a 10⁻¹⁰ error still fails, up to K = 2²⁰.
func TestFloat64PositiveData(t *testing.T) {
	for _, k := range []int{1, 300, 65536, 1 << 20} {
		if k > 1<<16 && raceOn {
			continue
		}
		rng := rand.New(rand.NewPCG(uint64(k), 46))
		a, b := randomMatrix64(6, k, true, rng), randomMatrix64(k, 5, true, rng)
		right := float64Product(a, b, 1)
		for _, mode := range []Mode{Full, Freivalds} {
			if r := float64Arithmetic.check64(mode, a, b, right); !r.OK || k > 1 && r.WorstRatio > 0.5 {
				t.Errorf("K=%d %s: right product: %v", k, mode, r)
			}
			if r := float64Arithmetic.check64(mode, a, b, scaled64(right, 1+1e-10)); r.OK {
				t.Errorf("K=%d %s: C×(1+1e-10) accepted: %v", k, mode, r)
			}
		}
	}
}

// TestFloat64CorruptionIsCaught: one element (or row) corrupted the ways
// a broken kernel does, down to one term dropped, fails both modes.
func TestFloat64CorruptionIsCaught(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 47))
	a, b := randomMatrix64(40, 300, false, rng), randomMatrix64(300, 50, false, rng)
	right := float64Product(a, b, 1)
	for name, corrupt := range map[string]func(c blas64.General){
		"nan":       func(c blas64.General) { c.Data[len(c.Data)/2] = math.NaN() },
		"inf":       func(c blas64.General) { c.Data[0] = math.Inf(-1) },
		"zeroed":    func(c blas64.General) { c.Data[c.Stride*(c.Rows-1)] = 0 },
		"dropped-k": func(c blas64.General) { c.Data[c.Stride+2] -= a.Data[a.Stride+5] * b.Data[5*b.Stride+2] },
		"row-shift": func(c blas64.General) { copy(c.Data[c.Stride:2*c.Stride], c.Data[:c.Stride]) },
	} {
		for _, mode := range []Mode{Full, Freivalds} {
			c := scaled64(right, 1)
			corrupt(c)
			r := Check64(mode, a, b, c, rand.New(rand.NewPCG(5, 6)))
			if r.OK {
				t.Errorf("%s %s: not caught: %+v", name, mode, r)
				continue
			}
			if err := r.Err(); err == nil || !strings.Contains(err.Error(), "double-double reference") {
				t.Errorf("%s %s: Err() = %v", name, mode, err)
			}
		}
	}
	if r := Check64(Auto, a, b, right, nil); !r.OK || r.Mode != Full {
		t.Errorf("auto on a small product: %v", r)
	}
}

// TestDoubleDoubleReference: the reference's sums hi + lo are within
// γ_K(2⁻⁵³)²·Σ|aₖbₖ| of the exact sums (math/big), the bound the
// tolerance adds for them, on random data and on sums that cancel to
// 10⁻³⁰ of their terms, where float64 alone loses every digit.
func TestDoubleDoubleReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 48))
	m, k, n := 5, 2000, 7
	a, b := randomMatrix64(m, k, false, rng), randomMatrix64(k, n, false, rng)
	// Row 0 of A against column 0 of B: huge terms that cancel, then the
	// small ones (Ogita, Rump and Oishi's ill-conditioned dot products).
	for l := 0; l < 100; l += 2 {
		e := math.Ldexp(1, rng.IntN(100))
		a.Data[l], a.Data[l+1] = e*(1+rng.Float64()), -e*(1+rng.Float64())
		b.Data[l*b.Stride], b.Data[(l+1)*b.Stride] = a.Data[l+1], a.Data[l]
	}
	hi, lo, mag, peak := make([]float64, m*n), make([]float64, m*n), make([]float64, m*n), make([]float64, m*n)
	ddSums(a, b, hi, lo, mag, peak)
	g := gamma(k, u64)
	for i := range m {
		for j := range n {
			exact := new(big.Float).SetPrec(2000)
			for l := range k {
				p := new(big.Float).SetPrec(2000).SetFloat64(a.Data[i*a.Stride+l])
				exact.Add(exact, p.Mul(p, new(big.Float).SetFloat64(b.Data[l*b.Stride+j])))
			}
			dd := new(big.Float).SetPrec(2000).SetFloat64(hi[i*n+j])
			dd.Add(dd, new(big.Float).SetFloat64(lo[i*n+j]))
			err, _ := dd.Sub(dd, exact).Float64()
			if bound := g * g * mag[i*n+j]; math.Abs(err) > bound {
				t.Errorf("C[%d][%d]: the double-double sum is %.3g off, over γ²·Σ|ab| = %.3g", i, j, err, bound)
			}
			if f, _ := exact.Float64(); math.Abs(f) > peak[i*n+j] {
				t.Errorf("C[%d][%d] = %.3g, beyond the peak %.3g of its partial sums", i, j, f, peak[i*n+j])
			}
		}
	}
}

// TestFloat64NaNInfAndOverflow: as for float32 (TestFullAcceptsPropagatedNaNAndInf,
// TestOverflowSign), a NaN or an Inf in A's row i or B's column j must make
// C's element NaN or ±Inf, and a non-finite element of finite inputs is
// accepted only where float64 can make it: +Inf where the positive terms
// can pass float64's largest value, −Inf the negative ones, NaN both.
func TestFloat64NaNInfAndOverflow(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	gen := func(r, c int, d ...float64) blas64.General {
		return blas64.General{Rows: r, Cols: c, Stride: c, Data: d}
	}
	modes := map[string]func(a, b, c blas64.General) Result{
		"full":      CheckFull64,
		"freivalds": func(a, b, c blas64.General) Result { return CheckFreivalds64(a, b, c, 4, rand.New(rand.NewPCG(1, 2))) },
	}
	id := gen(2, 2, 1, 0, 0, 1)
	for _, c := range []struct {
		name    string
		a, b, c blas64.General
		ok      bool
	}{
		// A·I: row 0 = [NaN, NaN (NaN·0)], row 1 = [+Inf, NaN (Inf·0)].
		{"propagated", gen(2, 2, nan, 1, inf, 2), id, gen(2, 2, nan, nan, inf, nan), true},
		{"finite where NaN must reach", gen(2, 2, nan, 1, inf, 2), id, gen(2, 2, nan, 1, inf, nan), false},
		{"NaN from finite inputs", gen(2, 2, 1, 1, 3, 2), id, gen(2, 2, nan, 1, 3, 2), false},
		{"column of B", id, gen(2, 2, 1, inf, 2, 3), gen(2, 2, 1, inf, 2, -inf), true},
		{"cancel", gen(1, 2, 1e308, 1e308), gen(2, 1, 1, -1), gen(1, 1, inf), false},
		{"cancel, 0", gen(1, 2, 1e308, 1e308), gen(2, 1, 1, -1), gen(1, 1, 0), true},
		{"positive", gen(1, 2, 1e300, 1), gen(2, 1, 1e10, 1), gen(1, 1, inf), true},
		{"positive, -Inf", gen(1, 2, 1e300, 1), gen(2, 1, 1e10, 1), gen(1, 1, -inf), false},
		{"positive, NaN", gen(1, 2, 1e300, 1), gen(2, 1, 1e10, 1), gen(1, 1, nan), false},
		{"both", gen(1, 2, 1e300, 1e300), gen(2, 1, 1e10, -1e10), gen(1, 1, nan), true},
		{"wrong beside an overflow", gen(1, 2, 1e300, 1), gen(2, 2, 1e10, 1, 1, 1), gen(1, 2, inf, 1.5e300), false},
		{"right beside an overflow", gen(1, 2, 1e300, 1), gen(2, 2, 1e10, 1, 1, 1), gen(1, 2, inf, 1e300), true},
	} {
		for name, check := range modes {
			if r := check(c.a, c.b, c.c); r.OK != c.ok {
				t.Errorf("%s, %s: ok %v, want %v (%v)", c.name, name, r.OK, c.ok, r)
			}
		}
	}
}
