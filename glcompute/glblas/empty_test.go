package glblas

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/glmul/glmul/cpu"
	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/internal/conformance"
	"github.com/glmul/glmul/internal/gltest"
)

// TestSgemmEmpty: the gonum drop-in follows BLAS on empty products (it
// hands them to gonum, whose slice-length rules apply: A of m×0 with lda
// 1 still takes m−1 floats): k = 0 gives C = β·C, m or n = 0 leaves C
// alone.
func TestSgemmEmpty(t *testing.T) {
	d := gltest.Open(t)
	impl := Float32{Device: d, Threshold: 1}
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
	for i := range c {
		if c[i] != x.Data[i] {
			t.Fatalf("n = 0: C[%d] = %v, want it untouched, %v", i, c[i], x.Data[i])
		}
	}
}

// TestAfterRelease: a Float32 or Float64 whose Device was released (owned
// or borrowed) computes on gonum, correctly, rather than failing.
func TestAfterRelease(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	a, b := cpu.Random(9, 9, rng), cpu.Random(9, 9, rng)
	want := cpu.New(9, 9)
	cpu.Sgemm(want, a, b)
	a64, b64 := conformance.Random64(9, 9, 9, rng), conformance.Random64(9, 9, 9, rng)
	want64 := make([]float64, 81)
	gonum.Implementation{}.Dgemm(blas.NoTrans, blas.NoTrans, 9, 9, 9, 1, a64.Data, 9, b64.Data, 9, 0, want64, 9)
	check := func(t *testing.T, d *glcompute.Device) {
		f32, f64 := Float32{Device: d, Threshold: 1}, Float64{Device: d, Threshold: 1}
		d.Release()
		c := cpu.New(9, 9)
		f32.Sgemm(blas.NoTrans, blas.NoTrans, 9, 9, 9, 1, a.Data, 9, b.Data, 9, 0, c.Data, 9)
		for i := range c.Data {
			if math.Abs(float64(c.Data[i]-want.Data[i])) > 1e-5 {
				t.Fatalf("Sgemm after Release: C[%d] = %v, want %v", i, c.Data[i], want.Data[i])
			}
		}
		c64 := make([]float64, 81)
		f64.Dgemm(blas.NoTrans, blas.NoTrans, 9, 9, 9, 1, a64.Data, 9, b64.Data, 9, 0, c64, 9)
		for i := range c64 {
			if c64[i] != want64[i] {
				t.Fatalf("Dgemm after Release: C[%d] = %v, want gonum's %v", i, c64[i], want64[i])
			}
		}
	}
	t.Run("owned", func(t *testing.T) { check(t, gltest.Open(t)) })
	t.Run("borrowed", func(t *testing.T) { gltest.Borrowed(t, func(d *glcompute.Device) { check(t, d) }) })
}
