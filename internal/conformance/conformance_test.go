package conformance

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/cpu"
)

// The harness itself must fail a wrong implementation; a test that cannot
// fail is no test. These run the checks that Run makes against deliberately
// broken products.
func TestHarnessCatchesBrokenProducts(t *testing.T) {
	broken := map[string]Mul{
		"skips-last-k": func(c, a, b blas32.General) error {
			for i := 0; i < a.Rows; i++ {
				for j := 0; j < b.Cols; j++ {
					var s float32
					for k := 0; k < a.Cols-1; k++ {
						s += a.Data[i*a.Stride+k] * b.Data[k*b.Stride+j]
					}
					c.Data[i*c.Stride+j] = s
				}
			}
			return nil
		},
		"leaves-last-row": func(c, a, b blas32.General) error {
			cc := cpu.New(c.Rows, c.Cols)
			cpu.Sgemm(cc, compact(a), compact(b))
			for i := 0; i < c.Rows-1; i++ {
				copy(c.Data[i*c.Stride:i*c.Stride+c.Cols], cc.Data[i*c.Cols:])
			}
			return nil
		},
		"writes-padding": func(c, a, b blas32.General) error {
			cpu.Naive(c, a, b)
			if c.Stride > c.Cols {
				c.Data[c.Cols] = 0
			}
			return nil
		},
	}
	for name, mul := range broken {
		if err := Check(Shape{33, 5, 31}, 3, mul); err == nil {
			t.Errorf("harness passed a %s implementation", name)
		}
	}
}

func TestHarnessPassesCPU(t *testing.T) {
	Run(t, nil, func(c, a, b blas32.General) error { cpu.Naive(c, a, b); return nil })
	Run(t, nil, func(c, a, b blas32.General) error { cpu.Sgemm(c, a, b); return nil })
}

// TestMulRef64: MulRef64 of small integers is exact (A's row padding,
// NaN, unread), and its bound is 2γ_K of the terms' magnitudes, not of
// their sum.
// TestGemmRef64: a hand-computed α·Aᵀ·B + β·C with its bound, and α = 0
// reading neither A nor B (NaN there) where gonum's Dgemm would.
func TestGemmRef64(t *testing.T) {
	at := blas64.General{Rows: 3, Cols: 2, Stride: 2, Data: []float64{1, -4, 2, 5, 3, -6}} // A = [[1 2 3] [-4 5 -6]]ᵀ stored
	b := blas64.General{Rows: 3, Cols: 2, Stride: 2, Data: []float64{1, -1, 2, 1, -1, 1}}
	c := blas64.General{Rows: 2, Cols: 2, Stride: 3, Data: []float64{1, 2, math.NaN(), 3, 4}}
	ref, bound := GemmRef64(blas.Trans, blas.NoTrans, 2, at, b, -1, c)
	want := []float64{2*2 - 1, 2*4 - 2, 2*12 - 3, 2*3 - 4}
	u := math.Ldexp(1, -53)
	mag := []float64{2*8 + 1, 2*6 + 2, 2*20 + 3, 2*15 + 4} // 2·(|A||B|) + |C|
	for i, w := range want {
		if ref[i] != w || math.Abs(bound[i]-2*5*u*mag[i]) > 1e-3*bound[i] {
			t.Errorf("element %d: %v ± %v, want %v ± about %v", i, ref[i], bound[i], w, 2*5*u*mag[i])
		}
	}
	nan := blas64.General{Rows: 3, Cols: 2, Stride: 2, Data: []float64{math.NaN(), 1, 1, 1, 1, 1}}
	if ref, _ := GemmRef64(blas.Trans, blas.NoTrans, 0, nan, nan, 3, c); ref[0] != 3 || ref[3] != 12 {
		t.Errorf("α = 0 with NaN in A and B: %v, want 3·C", ref)
	}
}

func TestMulRef64(t *testing.T) {
	a := blas64.General{Rows: 2, Cols: 3, Stride: 4, Data: []float64{1, 2, 3, math.NaN(), -4, 5, -6, math.NaN()}}
	b := blas64.General{Rows: 3, Cols: 2, Stride: 2, Data: []float64{1, -1, 2, 1, -1, 1}}
	ref, bound := MulRef64(a, b)
	want := []float64{2, 4, 12, 3}
	for i, w := range want {
		if ref[i] != w || !(bound[i] > 0) {
			t.Errorf("element %d: %v ± %v, want %v and a positive bound", i, ref[i], bound[i], w)
		}
	}
	if u := math.Ldexp(1, -53); bound[0] < 2*3*u*8 || bound[0] > 2*3*u*8*1.01 {
		t.Errorf("bound %v for |A||B| = 8 at K = 3 (a sum of 2): want about 2·3·u·8", bound[0])
	}
}
