package glcompute

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/internal/conformance"
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
// alone); m or n = 0 returns at once; Plan and checkShape agree; negative
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
			if p, err := d.Plan(m, k, n, nil); p != (Layout{}) || err != nil {
				t.Errorf("Plan: %+v, %v", p, err)
			}
			if err := d.checkShape(m, k, n); err != nil {
				t.Errorf("checkShape: %v", err)
			}
		})
	}
	conformance.MustPanic(t, "negative", func() { d.Mul(cpu.New(2, 2), blas32.General{Rows: 2, Cols: -1}, cpu.New(2, 2), nil) })
	conformance.MustPanic(t, "inner dimensions", func() { d.Mul(cpu.New(2, 2), blas32.General{Rows: 2}, cpu.New(2, 2), nil) })
}

// TestGemmEmpty: resident views with no rows or columns. k = 0 gives
// C = β·C for each transpose (β = 0 overwrites NaN; β = 1 leaves C as
// it is), Matrix.Mul and mulKernel zeros; m or n = 0 leaves C alone; empty Upload and
// Download do nothing; on a borrowed context too, whose state stays.
func TestGemmEmpty(t *testing.T) {
	for _, borrowed := range []bool{false, true} {
		t.Run(fmt.Sprintf("borrowed=%v", borrowed), func(t *testing.T) {
			onDevice(t, borrowed, func(d *Device) { gemmEmpty(t, d, borrowed) })
		})
	}
}

func gemmEmpty(t *testing.T, d *Device, borrowed bool) {
	rng := rand.New(rand.NewPCG(21, 22))
	const m, n = 5, 7
	a, b, c := newMatrix(t, d, 6, 6), newMatrix(t, d, 6, 8), newMatrix(t, d, m, n)
	x := cpu.Random(m, n, rng)
	var before engineState
	if borrowed {
		setUpEngine(t)
		before = readEngineState()
	}
	for _, beta := range []float32{0, 0.5, 1} {
		for _, tA := range []blas.Transpose{blas.NoTrans, blas.Trans} {
			if err := c.Upload(x); err != nil {
				t.Fatal(err)
			}
			a.Rows, a.Cols, b.Rows, b.Cols = m, 0, 0, n // op(A) m×0, B 0×n
			if tA == blas.Trans {
				a.Rows, a.Cols = 0, m
			}
			if beta == 0 { // C's old contents must not be read
				if err := c.Upload(nanFilled(m, n)); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.Gemm(tA, blas.NoTrans, 2, a, b, beta); err != nil {
				t.Fatalf("β %v, %v: %v", beta, tA, err)
			}
			got := cpu.New(m, n)
			if err := c.Download(got); err != nil {
				t.Fatal(err)
			}
			for i, v := range got.Data {
				if want := beta * x.Data[i]; v != want {
					t.Fatalf("k = 0, β %v, %v: C[%d] = %v, want %v", beta, tA, i, v, want)
				}
			}
		}
	}
	if err := c.Upload(x); err != nil {
		t.Fatal(err)
	}
	a.Rows, a.Cols, b.Rows, b.Cols = m, 0, 0, n
	if err := c.Mul(a, b); err != nil {
		t.Fatal(err)
	}
	got := cpu.New(m, n)
	c.Download(got)
	closeTo(t, "Mul with k = 0", got.Data, make([]float32, m*n), 0)
	c.Upload(x)
	if err := c.mulKernel("tiled32", a, b); err != nil {
		t.Fatal(err)
	}
	c.Download(got)
	closeTo(t, "mulKernel with k = 0", got.Data, make([]float32, m*n), 0)
	if err := a.Upload(blas32.General{Rows: m}); err != nil {
		t.Errorf("empty Upload: %v", err)
	}
	if err := b.Download(blas32.General{Cols: n, Stride: n}); err != nil {
		t.Errorf("empty Download: %v", err)
	}
	c.Upload(x)
	c.Rows, a.Rows, a.Cols, b.Rows, b.Cols = 0, 0, 3, 3, n // m = 0
	if err := c.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0); err != nil {
		t.Fatal(err)
	}
	c.Rows, c.Cols, a.Rows, b.Cols = m, 0, m, 0 // n = 0
	if err := c.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0); err != nil {
		t.Fatal(err)
	}
	if borrowed {
		if after := readEngineState(); after != before {
			t.Errorf("the host's state changed: %+v, was %+v", after, before)
		}
	}
	c.Cols = n
	c.Download(got)
	closeTo(t, "C after m = 0 and n = 0", got.Data, x.Data, 0)
	a.Cols = -1
	conformance.MustPanic(t, "Cols -1", func() { c.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0) })
}
