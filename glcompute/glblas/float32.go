// Package glblas is gonum's BLAS with its matrix products on a glcompute
// Device: Float32 for blas32 (Sgemm), Float64 for blas64 (Dgemm). Every
// other routine, and products under the measured crossover, run on
// gonum's own code. Install one for a whole program, and gonum's mat
// (Dense.Mul, and LU, Cholesky, QR built on blocked BLAS) uses the GPU:
//
//	blas64.Use(glblas.Float64{Device: dev})
package glblas

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/internal/link"
	"github.com/glmul/glmul/glcompute/tuning"
)

// Float32 is gonum's float32 BLAS with Sgemm on the GPU: products of at least
// Threshold multiply-adds run on Device, smaller ones and every other
// routine run on gonum's CPU code. Install it for a whole program with
//
//	blas32.Use(glblas.Float32{Device: dev})
//
// Sgemm has no error to return: if the GPU fails (out of memory, a lost
// context), it computes the product with gonum instead.
//
// Thread rule: as the Device (an owned Device: any goroutine).
type Float32 struct {
	gonum.Implementation
	Device *glcompute.Device
	// Threshold is the m·n·k at or above which Sgemm uses the GPU. Zero
	// value: the measured crossover for the device's vendor
	// (tuning.SgemmThreshold), or never where none was measured; on Mesa
	// llvmpipe only for products its cpu kernel runs (no transpose, α = 1,
	// β = 0, K and N multiples of 4).
	Threshold int
}

var _ blas.Float32 = Float32{}

// threshold returns the effective crossover.
func (impl Float32) threshold() int {
	if impl.Threshold > 0 {
		return impl.Threshold
	}
	return tuning.SgemmThreshold(driver(impl.Device))
}

// gpuPays reports whether an m×k by k×n Sgemm with these transposes and
// scalars should run on the device: at or above the threshold and, on a
// CPU driver with the default threshold, only where Gemm takes the cpu
// kernel (no transpose, α = 1, β = 0, K and N multiples of 4, which
// compact matrices then lay out as it needs): gemm.comp, which the rest
// would run, is 10-14× slower than gonum on the same cores.
func (impl Float32) gpuPays(tA, tB blas.Transpose, m, n, k int, alpha, beta float32) bool {
	if float64(m)*float64(n)*float64(k) < float64(impl.threshold()) {
		return false
	}
	if impl.Threshold > 0 || !tuning.OnCPU(driver(impl.Device)) {
		return true
	}
	return tA == blas.NoTrans && tB == blas.NoTrans && alpha == 1 && beta == 0 && k%4 == 0 && n%4 == 0
}

// Sgemm computes C = α·op(A)·op(B) + β·C, row-major, op(X) = X or Xᵀ, with
// gonum's argument rules and panics.
func (impl Float32) Sgemm(tA, tB blas.Transpose, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	cpu := func() { impl.Implementation.Sgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) }
	if impl.Device == nil || m == 0 || n == 0 || k == 0 || alpha == 0 || !impl.gpuPays(tA, tB, m, n, k, alpha, beta) {
		cpu()
		return
	}
	ar, ac, br, bc, ok := gemmShapes(tA, tB, m, n, k, lda, ldb, ldc, len(a), len(b), len(c))
	if !ok {
		cpu() // gonum panics with its own message
		return
	}
	if !impl.gpu(tA, tB, alpha, blas32.General{Rows: ar, Cols: ac, Stride: lda, Data: a},
		blas32.General{Rows: br, Cols: bc, Stride: ldb, Data: b}, beta,
		blas32.General{Rows: m, Cols: n, Stride: ldc, Data: c}) {
		cpu()
	}
}

// gemmShapes returns the shapes of A and B as stored (ar×ac, br×bc) of a
// Sgemm or Dgemm with these arguments, and whether gonum accepts the
// arguments: where not, the caller lets gonum's own call panic with its
// message, so that nothing the GPU path could misread reaches it.
func gemmShapes(tA, tB blas.Transpose, m, n, k, lda, ldb, ldc, lenA, lenB, lenC int) (ar, ac, br, bc int, ok bool) {
	ar, ac = m, k
	if tA != blas.NoTrans {
		ar, ac = k, m
	}
	br, bc = k, n
	if tB != blas.NoTrans {
		br, bc = n, k
	}
	trans := func(t blas.Transpose) bool { return t == blas.NoTrans || t == blas.Trans || t == blas.ConjTrans }
	ok = trans(tA) && trans(tB) && m >= 0 && n >= 0 && k >= 0 && lda >= max(1, ac) && ldb >= max(1, bc) && ldc >= max(1, n) &&
		lenA >= (ar-1)*lda+ac && lenB >= (br-1)*ldb+bc && lenC >= (m-1)*ldc+n
	return ar, ac, br, bc, ok
}

// gpu runs the product on the device and reports whether it succeeded.
func (impl Float32) gpu(tA, tB blas.Transpose, alpha float32, a, b blas32.General, beta float32, c blas32.General) bool {
	d := impl.Device
	if !link.Usable(d, [2]int{a.Rows, a.Cols}, [2]int{b.Rows, b.Cols}, [2]int{c.Rows, c.Cols}) {
		return false
	}
	var mats []*glcompute.Matrix
	defer func() {
		for _, m := range mats {
			m.Release()
		}
	}()
	upload := func(g blas32.General, needed bool) *glcompute.Matrix {
		m, err := d.NewMatrix(g.Rows, g.Cols)
		if err != nil {
			return nil
		}
		mats = append(mats, m)
		if needed && m.Upload(g) != nil {
			return nil
		}
		return m
	}
	ga, gb := upload(a, true), upload(b, true)
	gc := upload(c, beta != 0)
	if ga == nil || gb == nil || gc == nil || math.IsNaN(float64(alpha)) || math.IsNaN(float64(beta)) {
		return false
	}
	if gc.Gemm(tA, tB, alpha, ga, gb, beta) != nil {
		return false
	}
	return gc.Download(c) == nil
}

// driver is d's tuning.Driver, whose crossovers the zero Thresholds take.
func driver(d *glcompute.Device) tuning.Driver { return link.Driver(d).(tuning.Driver) }
