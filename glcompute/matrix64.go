package glcompute

import (
	"cmp"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/glmul/glmul/shaders"
)

// Resident float64 matrices: a Matrix made by NewMatrix64, moved with
// Upload64 and Download64 and multiplied with Gemm64 (and Mul), and in
// batches with GemmBatched64 (batched.go; and MulBatched). Its
// Rows, Cols, Stride and Offset count doubles. The transfers and the
// bounds checks see it as a float32 matrix of twice the columns, stride
// and offset (words), as Mul64's host products do (words.go); the kernels
// are dfast for a product without transposes, α = 1 and β = 0, and
// gemm.comp in doubles (GEMM64) for the rest.

// NewMatrix64 creates a rows×cols float64 matrix in a new buffer, as
// NewMatrix does a float32 one (its panics and errors); it returns an error
// matching ErrUnsupported where the device has no float64 in shaders
// (OpenGL ES). Its methods are Upload64, Download64, Gemm64 and Mul (and
// Device.GemmBatched64, MulBatched); the float32 ones (Upload, Download,
// Gemm, GemmBatched) panic on it.
func (d *Device) NewMatrix64(rows, cols int) (*Matrix, error) {
	if rows < 1 || cols < 1 {
		panic("glcompute: matrix dimension below 1")
	}
	if err := d.float64Support(); err != nil {
		return nil, err
	}
	if cols > math.MaxInt/2 {
		return nil, fmt.Errorf("%w: a %d×%d matrix has more elements than any buffer can hold", ErrTooLarge, rows, cols)
	}
	m, err := d.newMatrix(rows, 2*cols, "float64")
	if err != nil {
		return nil, err
	}
	m.Cols, m.Stride, m.f64 = cols, cols, true
	return m, nil
}

// Upload64 copies src, which must have m's shape, into float64 matrix m,
// as Upload does for float32 (only m's elements written, queued, src
// reusable at once), bit for bit: a NaN's payload and a signed zero arrive
// as they were.
func (m *Matrix) Upload64(src blas64.General) error {
	m.mustBe(true, "Upload64")
	checkShape64(m, src)
	w, _ := m.words() // checkView's panic comes first where they do not fit
	return w.Upload(words64(src))
}

// Download64 copies float64 matrix m into dst, which must have m's shape,
// as Download does for float32: it waits for the GPU work that writes m.
func (m *Matrix) Download64(dst blas64.General) error {
	m.mustBe(true, "Download64")
	checkShape64(m, dst)
	w, _ := m.words()
	return w.Download(words64(dst))
}

// checkShape64 panics unless host has m's shape (the words' transfer
// checks host's stride and length).
func checkShape64(m *Matrix, host blas64.General) {
	m.checkView(m.d)
	if host.Rows != m.Rows || host.Cols != m.Cols {
		panic("glcompute: Upload64 or Download64: shapes differ")
	}
}

// words is float64 matrix m as the float32 matrix of its words (twice
// the columns, stride and offset) in the same buffer; ok false where
// doubling overflows (such a matrix lies past any buffer).
func (m *Matrix) words() (w *Matrix, ok bool) {
	if max(m.Cols, m.Stride, m.Offset) > math.MaxInt/2 {
		return nil, false
	}
	v := *m
	v.Cols, v.Stride, v.Offset, v.f64 = 2*m.Cols, 2*m.Stride, 2*m.Offset, false
	return &v, true
}

// mustBe panics unless m's elements are float64 (f64) or float32 (not
// f64): each method is for one element type.
func (m *Matrix) mustBe(f64 bool, method string) {
	switch {
	case m.f64 == f64:
	case f64:
		panic(fmt.Sprintf("glcompute: %s on a float32 Matrix: NewMatrix64 makes float64 ones", method))
	default:
		panic(fmt.Sprintf("glcompute: %s on a float64 Matrix: use its float64 method (Upload64, Download64, Gemm64)", method))
	}
}

// Gemm64 computes c = α·op(A)·op(B) + β·c on resident float64 matrices,
// as Gemm does on float32 ones (its semantics, panics and queueing). A
// product without transposes, α = 1 and β = 0 runs the device's float64
// kernel (dfast, Info.Float64Kernel, read through storage buffers, its
// double-by-double configuration where a row of A or B is of odd length
// or starts at an odd offset); the rest run gemm.comp in doubles.
func (c *Matrix) Gemm64(tA, tB blas.Transpose, alpha float64, a, b *Matrix, beta float64) error {
	transA, transB, ak, emptyC := gemmShape("Gemm64", true, c, a, b, tA, tB, math.IsNaN(alpha) || math.IsNaN(beta))
	d := c.d
	switch {
	case emptyC || ak == 0 && beta == 1:
		d.checkOpen()
		return nil
	case ak == 0:
		return d.generalGemm(shaders.GEMM64(), c, c, c, false, false, 0, true, func(p *program, _ bool) {
			p.setDouble("alpha", 0)
			p.setDouble("beta", beta)
		})
	}
	if !transA && !transB && alpha == 1 && beta == 0 {
		if ran, err := d.dfastResident(c, a, b); ran {
			return err
		}
	}
	return d.generalGemm(shaders.GEMM64(), c, a, b, transA, transB, ak, alpha == 0, func(p *program, first bool) {
		p.setDouble("alpha", alpha)
		p.setDouble("beta", chunkBeta(first, beta))
	})
}

// dfastResident runs c = a·b with the device's float64 kernel where it
// may: without its buffer textures (a resident matrix's buffer has no
// texture of its own), reading double by double (_u) where a row of A or
// B has odd length, stride or offset (dvec2 loads need even ones), and
// not where K is over what the driver lets it loop over (ran false: the
// caller runs GEMM64 in K chunks). The kernel comes from LookupFloat64's
// memo, so a resident call builds no shader text.
func (d *Device) dfastResident(c, a, b *Matrix) (ran bool, err error) {
	dev, err := shaders.LookupFloat64(cmp.Or(d.float64Kernel(c.Rows, a.Cols, c.Cols), "dfast"))
	if err != nil {
		return false, nil // Open checked the device's choice: not reached
	}
	cfg, err := shaders.ParseDFastConfig(dev.Config)
	if err != nil {
		return false, nil
	}
	cfg.Tex = false
	cfg.Unaligned = cfg.Unaligned || (a.Cols|a.Stride|a.Offset|b.Cols|b.Stride|b.Offset)%2 != 0
	k, err := shaders.LookupFloat64("dfast:" + cfg.String())
	if err != nil || d.fits(k) != nil || d.kSlices(k, a.Cols) > 1 {
		return false, nil
	}
	return true, d.resident(func() (*program, error) { return d.programOf(k) }, a, b, c, func(p *program, offA, offB, offC int) {
		p.setLayout(c.Rows, a.Cols, c.Cols, a.Stride, b.Stride, c.Stride, offA, offB, offC)
	})
}
