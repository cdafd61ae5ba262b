package glblas

import (
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/testblas"
	lapackgonum "gonum.org/v1/gonum/lapack/gonum"
	"gonum.org/v1/gonum/lapack/testlapack"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/internal/link"
	"github.com/glmul/glmul/internal/gltest"
)

// countingFloat64 counts the Dgemm calls that Float64 with Threshold 1
// must send to the GPU: those with a product to compute (m, n and k
// above 0, α not 0).
type countingFloat64 struct {
	Float64
	gpu *int64
}

func (c countingFloat64) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, cc []float64, ldc int) {
	if m > 0 && n > 0 && k > 0 && alpha != 0 {
		*c.gpu++
	}
	c.Float64.Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, cc, ldc)
}

// gpuFloat64 returns Float64 with every product on d's GPU, counted, a
// fallback failing t.
func gpuFloat64(t *testing.T, d *glcompute.Device) countingFloat64 {
	return countingFloat64{Float64{Device: d, Threshold: 1, Fallback: func(err error) { t.Errorf("Dgemm fell back to gonum: %v", err) }}, new(int64)}
}

// checkRan fails t unless every product impl counted since runs ran on
// d's GPU, and at least one did.
func checkRan(t *testing.T, d *glcompute.Device, impl countingFloat64, runs int64) {
	t.Helper()
	if got := link.Runs64(d) - runs; got != *impl.gpu || got == 0 {
		t.Errorf("%d float64 products ran on the GPU, want the %d calls that had one (and some)", got, *impl.gpu)
	}
}

// TestFloat64Conformance runs gonum's own Dgemm tests (testblas) against
// Float64 with every product on the GPU.
func TestFloat64Conformance(t *testing.T) {
	d := gltest.Open(t)
	needFloat64(t, d)
	impl, runs := gpuFloat64(t, d), link.Runs64(d)
	testblas.TestDgemm(t, impl)
	checkRan(t, d, impl, runs)
}

// TestFloat64Lapack runs gonum's LAPACK tests of routines whose blocked
// code calls Dgemm, with gonum's native LAPACK on blas64.Use(Float64) and
// every product on the GPU: Dgetri's (Dgetrf's blocked LU at n = 150
// too), Dpotrf's, Dlarfb's (every side, transpose and storage of the
// block reflectors that Dgeqrf's blocked QR applies), Dlauum's and
// Dgebrd's; about 3 s on llvmpipe. Left out for time: DgetrfTest (6.4 s:
// its checks multiply 3000×3000 by 3000×1, which the default 128×128
// tiles compute 128 columns for), DgeqrfTest (1.5-2 s) and DgehrdTest
// (3.2 s).
func TestFloat64Lapack(t *testing.T) {
	d := gltest.Open(t)
	needFloat64(t, d)
	impl := gpuFloat64(t, d)
	prev := blas64.Implementation()
	blas64.Use(impl)
	defer blas64.Use(prev)
	lp := lapackgonum.Implementation{}
	for _, c := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"Dpotrf", func(t *testing.T) { testlapack.DpotrfTest(t, lp) }},
		{"Dgetri", func(t *testing.T) { testlapack.DgetriTest(t, lp) }},
		{"Dlarfb", func(t *testing.T) { testlapack.DlarfbTest(t, lp) }},
		{"Dlauum", func(t *testing.T) { testlapack.DlauumTest(t, lp) }},
		{"Dgebrd", func(t *testing.T) { testlapack.DgebrdTest(t, lp) }},
	} {
		runs, calls, start := link.Runs64(d), *impl.gpu, time.Now()
		t.Run(c.name, c.run)
		t.Logf("%s: %d products on the GPU, %v", c.name, link.Runs64(d)-runs, time.Since(start))
		if got := link.Runs64(d) - runs; got != *impl.gpu-calls {
			t.Errorf("%s: %d float64 products ran on the GPU, want the %d calls that had one", c.name, got, *impl.gpu-calls)
		}
	}
}
