package glblas

import (
	"errors"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/blas/gonum"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/internal/link"
	"github.com/glmul/glmul/glcompute/tuning"
)

// Float64 is gonum's float64 BLAS with Dgemm on the GPU (Device.Mul64's
// path): products of at least Threshold multiply-adds run on Device, smaller ones
// and every other routine on gonum's CPU code, as Float32 does for float32.
// Install it for a whole program with
//
//	blas64.Use(glblas.Float64{Device: dev})
//
// A Dgemm the device cannot run (no float64 in its shaders, panels of one
// tile over a storage binding) or that fails runs on gonum; Fallback says
// why.
//
// Thread rule: as the Device (an owned Device: any goroutine).
type Float64 struct {
	gonum.Implementation
	Device *glcompute.Device
	// Threshold is the m·n·k at or above which Dgemm uses the GPU (1:
	// every product). Zero value: tuning.DgemmThreshold for the device,
	// never on OpenGL on a CPU (llvmpipe), where gonum is faster.
	Threshold int
	// Fallback, if set, is called with the error that sent a Dgemm at or
	// above the threshold to gonum, on Dgemm's goroutine: once per Device
	// for each kind of error (ErrUnsupported, as on OpenGL ES; ErrTooLarge;
	// ErrOutOfMemory; any other). A released Device's Dgemm goes to gonum
	// unsaid. Zero value: nothing is said.
	Fallback func(error)
}

var _ blas.Float64 = Float64{}

// threshold returns the effective crossover.
func (impl Float64) threshold() int {
	if impl.Threshold > 0 {
		return impl.Threshold
	}
	return tuning.DgemmThreshold(driver(impl.Device))
}

// Dgemm computes C = α·op(A)·op(B) + β·C, row-major, op(X) = X or Xᵀ, with
// gonum's argument rules and panics; β = 0 does not read C. On the GPU,
// op(A)·op(B) is computed there and α and β applied on the host.
func (impl Float64) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	cpu := func() { impl.Implementation.Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) }
	d := impl.Device
	if d == nil || m == 0 || n == 0 || k == 0 || alpha == 0 || float64(m)*float64(n)*float64(k) < float64(impl.threshold()) {
		cpu()
		return
	}
	ar, ac, br, bc, ok := gemmShapes(tA, tB, m, n, k, lda, ldb, ldc, len(a), len(b), len(c))
	if !ok || !link.Usable(d) {
		cpu() // gonum panics with its own message on bad arguments
		return
	}
	err := impl.gpu(tA, tB, alpha, blas64.General{Rows: ar, Cols: ac, Stride: lda, Data: a},
		blas64.General{Rows: br, Cols: bc, Stride: ldb, Data: b}, beta,
		blas64.General{Rows: m, Cols: n, Stride: ldc, Data: c})
	if err != nil {
		impl.tell(err)
		cpu()
	}
}

// gpu computes the product on the device, into C where α = 1 and β = 0,
// else into a matrix of its own that α and β then combine with C. C is
// untouched where it fails.
func (impl Float64) gpu(tA, tB blas.Transpose, alpha float64, a, b blas64.General, beta float64, c blas64.General) error {
	d := impl.Device
	p := c
	if alpha != 1 || beta != 0 {
		p = blas64.General{Rows: c.Rows, Cols: c.Cols, Stride: c.Cols, Data: make([]float64, c.Rows*c.Cols)}
	}
	if err := link.Product64(d, p, tA, a, tB, b); err != nil {
		return err
	}
	if alpha == 1 && beta == 0 {
		return nil
	}
	for i := range c.Rows {
		row, prow := c.Data[i*c.Stride:i*c.Stride+c.Cols], p.Data[i*p.Stride:]
		for j := range row {
			if beta == 0 {
				row[j] = alpha * prow[j]
			} else {
				row[j] = alpha*prow[j] + beta*row[j]
			}
		}
	}
	return nil
}

// fallbackKinds are the kinds of error Float64.Fallback hears once per
// Device each; any other error is a kind of its own, the last bit.
var fallbackKinds = []error{glcompute.ErrUnsupported, glcompute.ErrTooLarge, glcompute.ErrOutOfMemory}

// tell calls Fallback with err unless the Device already told it an
// error of that kind.
func (impl Float64) tell(err error) {
	if impl.Fallback == nil {
		return
	}
	bit := uint32(1) << len(fallbackKinds)
	for i, kind := range fallbackKinds {
		if errors.Is(err, kind) {
			bit = 1 << i
			break
		}
	}
	if link.FirstTold(impl.Device, bit) {
		impl.Fallback(err)
	}
}
