package glcompute

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
)

// Empty products, as BLAS and NumPy define them: k = 0 gives C = β·C (Mul:
// zeros; 5×0 by 0×4 is 5×4 zeros), m or n = 0 does nothing (a new
// user's audit).

// nanFilled returns a rows×cols matrix of NaN, row stride cols+3.
func nanFilled(rows, cols int) blas32.General {
	g := blas32.General{Rows: rows, Cols: cols, Stride: cols + 3, Data: make([]float32, max(0, (rows-1)*(cols+3)+cols))}
	for i := range g.Data {
		g.Data[i] = float32(math.NaN())
	}
	return g
}

// TestMulEmpty: k = 0 overwrites C with zeros (and leaves its stride gaps
// alone); m or n = 0 returns at once; Plan and CheckShape agree; negative
// dimensions still panic. All three panicked ("matrix dimension below 1").
func TestMulEmpty(t *testing.T) {
	d := openDevice(t, BackendEGL)
	for _, s := range [][3]int{{5, 0, 4}, {1, 0, 1}, {0, 3, 4}, {5, 3, 0}, {0, 0, 0}} {
		m, k, n := s[0], s[1], s[2]
		t.Run(fmt.Sprintf("%dx%dx%d", m, k, n), func(t *testing.T) {
			a, b, c := nanFilled(m, k), nanFilled(k, n), nanFilled(m, n)
			if _, err := d.Mul(c, a, b, nil); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < m; i++ {
				for j := 0; j < c.Stride && i*c.Stride+j < len(c.Data); j++ {
					if v := c.Data[i*c.Stride+j]; j < n && v != 0 || j >= n && !math.IsNaN(float64(v)) {
						t.Fatalf("C[%d][%d] = %v after the product (%d columns)", i, j, v, n)
					}
				}
			}
			if p, err := d.Plan(m, k, n, nil); p != "" || err != nil {
				t.Errorf("Plan: %q, %v", p, err)
			}
			if err := d.CheckShape(m, k, n); err != nil {
				t.Errorf("CheckShape: %v", err)
			}
		})
	}
	mustPanic(t, "negative", func() { d.Mul(cpu.New(2, 2), blas32.General{Rows: 2, Cols: -1}, cpu.New(2, 2), nil) })
	mustPanic(t, "inner dimensions", func() { d.Mul(cpu.New(2, 2), blas32.General{Rows: 2}, cpu.New(2, 2), nil) })
}

// TestSgemmEmpty: the gonum drop-in follows BLAS on empty products (it
// hands them to gonum, whose slice-length rules apply: A of m×0 with lda
// 1 still takes m−1 floats): k = 0 gives C = β·C, m or n = 0 leaves C
// alone.
func TestSgemmEmpty(t *testing.T) {
	d := openDevice(t, BackendEGL)
	impl := BLAS{Device: d, Threshold: 1}
	rng := rand.New(rand.NewPCG(23, 24))
	x := cpu.Random(5, 4, rng)
	for _, beta := range []float32{0, 0.5, 1} {
		c := append([]float32(nil), x.Data...)
		impl.Sgemm(blas.NoTrans, blas.NoTrans, 5, 4, 0, 2, make([]float32, 4), 1, nil, 4, beta, c, 4)
		for i, v := range c {
			if want := beta * x.Data[i]; v != want {
				t.Fatalf("k = 0, β %v: C[%d] = %v, want %v", beta, i, v, want)
			}
		}
	}
	c := append([]float32(nil), x.Data...)
	impl.Sgemm(blas.NoTrans, blas.NoTrans, 0, 4, 3, 1, nil, 3, make([]float32, 12), 4, 0, nil, 4)
	impl.Sgemm(blas.NoTrans, blas.NoTrans, 5, 0, 3, 1, make([]float32, 15), 3, nil, 1, 0, c, 4)
	closeTo(t, "C after n = 0", c, x.Data, 0)
}
