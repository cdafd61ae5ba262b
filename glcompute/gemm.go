package glcompute

import (
	"errors"
	"math"
	"slices"

	"gonum.org/v1/gonum/blas"

	"github.com/glmul/glmul/glcompute/internal/dispatch"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/tuning"
	"github.com/glmul/glmul/shaders"
)

// Gemm computes c = α·op(A)·op(B) + β·c on resident matrices, as gonum's
// Sgemm does on slices: op(A) is c.Rows×K, op(B) is K×c.Cols, op(X) = X or
// Xᵀ. β = 0 overwrites c without reading it; α = 0 reads neither A nor B;
// a and b may be the same matrix; views with no rows or columns make an
// empty product, as in BLAS. Gemm only queues work and returns at once;
// a memory barrier after it makes c visible to later draws, dispatches
// and buffer reads; Device.Fence tells when it is done. The kernel it
// picks, and the scratch and workspace it keeps: docs/LIBRARY.md.
//
// It panics if the shapes disagree, a transpose is not blas.NoTrans,
// blas.Trans or blas.ConjTrans, α or β is NaN, or c's elements share
// floats of a buffer with a's or b's.
func (c *Matrix) Gemm(tA, tB blas.Transpose, alpha float32, a, b *Matrix, beta float32) error {
	transA, transB, ak, emptyC := gemmShape("Gemm", false, c, a, b, tA, tB, math.IsNaN(float64(alpha)) || math.IsNaN(float64(beta)))
	d := c.d
	switch {
	case emptyC || ak == 0 && beta == 1:
		d.checkOpen()
		return nil
	case ak == 0:
		return d.generalGemm(shaders.GEMM(), c, c, c, false, false, 0, true, func(p *program, _ bool) {
			p.setFloat("alpha", 0)
			p.setFloat("beta", beta)
		})
	}
	if !transA && !transB && alpha == 1 && beta == 0 && fastLayout(a) && fastLayout(b) && fastLayout(c) {
		return d.mulFast(c, a, b)
	}
	return d.generalGemm(shaders.GEMM(), c, a, b, transA, transB, ak, alpha == 0, func(p *program, first bool) {
		p.setFloat("alpha", alpha)
		p.setFloat("beta", chunkBeta(first, beta))
	})
}

// chunkBeta is the β of one of a product's K chunks: β for the first, 1
// after it (each adds its product to C).
func chunkBeta[T float32 | float64](first bool, beta T) T {
	if first {
		return beta
	}
	return 1
}

// generalGemm runs kern (GEMM, or GEMM64 on float64 matrices) for
// c = α·op(A)·op(B) + β·c, op(A)'s K columns in chunks where the driver's
// loop budget needs them (loops.go; not where alphaZero: A and B are not
// read), setAB setting α and β for each (first: the first chunk). K = 0
// with α = 0 computes c = β·c, c standing in for A and B.
func (d *Device) generalGemm(kern shaders.Kernel, c, a, b *Matrix, transA, transB bool, k int, alphaZero bool, setAB func(p *program, first bool)) error {
	chunk := max(k, 1)
	if r := d.maxKRange(kern); r > 0 && !alphaZero {
		chunk = min(chunk, r)
	}
	for k0 := 0; k0 == 0 || k0 < k; k0 += chunk {
		kn := min(chunk, k-k0)
		err := d.resident(func() (*program, error) { return d.programOf(kern) }, a, b, c,
			func(p *program, offA, offB, offC int) {
				offA += k0 * kStride(transA, a.Stride, 1)
				offB += k0 * kStride(transB, 1, b.Stride)
				p.setUints(uniform{"M", c.Rows}, uniform{"N", c.Cols}, uniform{"K", kn}, uniform{"lda", a.Stride}, uniform{"ldb", b.Stride},
					uniform{"ldc", c.Stride}, uniform{"offA", offA}, uniform{"offB", offB}, uniform{"offC", offC},
					uniform{"transA", boolInt(transA)}, uniform{"transB", boolInt(transB)})
				setAB(p, k0 == 0)
			})
		if err != nil {
			return err
		}
	}
	return nil
}

// gemmShape checks the operands of Gemm or Gemm64 (method; f64: of
// float64): matrices of the element type, live views of one Device, the
// shapes of op(A), op(B) and C agreeing, α and β not NaN (nan), and, for
// a product that reads A and B (C not empty, K above 0), C sharing no
// floats of a buffer with them; it returns the transposes, op(A)'s
// columns (K) and whether C is empty.
func gemmShape(method string, f64 bool, c, a, b *Matrix, tA, tB blas.Transpose, nan bool) (transA, transB bool, k int, emptyC bool) {
	for _, x := range []*Matrix{c, a, b} {
		x.mustBe(f64, method)
	}
	emptyC = c.checkView(c.d)
	a.checkView(c.d)
	b.checkView(c.d)
	transA, transB = isTrans(tA), isTrans(tB)
	am, ak := a.Rows, a.Cols
	if transA {
		am, ak = a.Cols, a.Rows
	}
	bk, bn := b.Rows, b.Cols
	if transB {
		bk, bn = b.Cols, b.Rows
	}
	if am != c.Rows || bn != c.Cols || ak != bk {
		panic("glcompute: " + method + ": shapes of op(A), op(B) and C disagree")
	}
	if nan {
		panic("glcompute: " + method + ": α or β is NaN")
	}
	// In elements: the three share one element type (mustBe above).
	if !emptyC && ak > 0 && (overlaps(c, c.Offset, c.span(), a, a.Offset, a.span()) || overlaps(c, c.Offset, c.span(), b, b.Offset, b.span())) {
		panic("glcompute: " + method + ": C overlaps A or B")
	}
	return transA, transB, ak, emptyC
}

// kStride is the elements between consecutive k of an operand: ifTrans
// where it is transposed, else plain.
func kStride(trans bool, ifTrans, plain int) int {
	if trans {
		return ifTrans
	}
	return plain
}

// isTrans reads a blas.Transpose as gonum does, panicking on any other
// value.
func isTrans(t blas.Transpose) bool {
	switch t {
	case blas.NoTrans:
		return false
	case blas.Trans, blas.ConjTrans:
		return true
	}
	panic("glcompute: bad transpose")
}

// overlaps reports whether floats [x0, x0+xn) of x's buffer and [y0,
// y0+yn) of y's share any float.
func overlaps(x *Matrix, x0, xn int, y *Matrix, y0, yn int) bool {
	return x.buf == y.buf && x0 < y0+yn && y0 < x0+xn
}

// mulFast runs c = a·b with the device's fast kernel on resident matrices:
// kernelFor's choice (through storage buffers rather than buffer textures
// under tuning.ResidentTexturesMin), reading A transposed where it does and the device
// has room for the transpose (mulTransposed), else its stand-in that reads
// A as it is (natural); or the generic fast configuration where that
// reads through buffer textures and a or b spans more than one views.
func (d *Device) mulFast(c, a, b *Matrix) error {
	spec := d.kernelFor(c.Rows, a.Cols, c.Cols)
	if !d.residentTextures && !tuning.ResidentTextures(c.Rows, a.Cols, c.Cols) {
		spec = shaders.WithTextures(spec, false) // textures cost a small resident product more than they give
	}
	if k, err := shaders.Lookup(spec); err == nil && k.TransposeA {
		if ran, err := d.mulTransposed(spec, c, a, b); ran {
			return err
		}
		spec = d.natural(spec, c.Rows, a.Cols, c.Cols)
	}
	if d.overTextures(spec, d.extent(a.Offset, a.span()), d.extent(b.Offset, b.span())) {
		spec = tuning.GenericDefault
	}
	return d.mulFilled(spec, c, a, b)
}

// mulFilled runs c = a·b on resident matrices with strided kernel spec
// reading A as it is, filled or split (planFill).
func (d *Device) mulFilled(spec string, c, a, b *Matrix) error {
	return d.runFilled(func(grow bool) error {
		p, plan, f, err := d.planFast(spec, c.Rows, a.Cols, c.Cols, grow)
		if err != nil {
			return err
		}
		d.clearErrors()
		return d.runFast(p, plan, f, a.Stride, func(q *program) int { return d.bind(q, 0, a, a.Offset, a.span()) }, b, c)
	})
}

// planFast compiles fast kernel spec and plans its m×k×n resident
// product: the dispatches and the fill (planFill), the workspace made
// large enough where grow allows (workFor); on the device thread. On an
// error, what resident calls remember of their bindings is forgotten;
// not on errGrowWork, which comes before anything is bound.
func (d *Device) planFast(spec string, m, k, n int, grow bool) (p *program, plan dispatch.Plan, f fillPlan, err error) {
	if p, err = d.programNamed(spec); err == nil {
		if plan, err = p.plan(m, n, defaultMaxGroups); err == nil {
			if f, err = d.planFill(p, plan, m, k, n); err == nil {
				f, err = d.workFor(f, k, grow)
			}
		}
	}
	if err != nil && !errors.Is(err, errGrowWork) {
		d.bound = boundState{}
	}
	return p, plan, f, err
}

// overTextures reports whether kernel spec reads through buffer textures
// and one of its inputs, of these bytes, is more than a texture views.
func (d *Device) overTextures(spec string, bytes ...int64) bool {
	k, err := shaders.Lookup(spec)
	return err == nil && k.Textures && slices.Max(bytes) > d.texBlock
}

// mulTransposed runs c = a·b on resident matrices with spec, a kernel
// that reads A transposed: transpose.comp writes A's transpose (k rows of
// m floats, rounded up to vec4s) into d.scratchT, a storage barrier, then
// the kernel reads it there. No barrier before the transpose: every
// resident product ends with one, which also holds the transpose's writes
// until the last product's reads of the scratch are done. ran is false,
// and nothing ran, where the transpose kernel does not fit the device, or
// the scratch does not fit one binding or the driver is out of memory for
// it (it is kept from earlier products, grown where too small); the
// caller then reads A as it is; so too where the kernel reads through
// buffer textures and B or the transpose is more than one views.
func (d *Device) mulTransposed(spec string, c, a, b *Matrix) (ran bool, err error) {
	m, k := c.Rows, a.Cols
	tk := shaders.Transpose()
	ldt := roundUp(m, tk.Align)
	bytes := 4 * int64(k) * int64(ldt)
	if d.fits(tk) != nil || d.checkBlock("A's transpose", bytes) != nil {
		return false, nil
	}
	if d.overTextures(spec, bytes, d.extent(b.Offset, b.span())) {
		return false, nil // its buffer textures would not view all of B or the transpose
	}
	grow := false
	run := func(growWork bool) {
		if d.scratchBytes < bytes {
			grow = true
			return
		}
		err = d.transposedProduct(spec, tk, c, a, b, ldt, bytes, growWork)
		grow = errors.Is(err, errGrowWork)
	}
	d.callKeeping(func() { run(false) })
	if !grow {
		return true, err
	}
	// Growing binds a copy target (newBuffer): a call that saves those too,
	// which runs the product as well, so that no other goroutine's product
	// can come between. The scratch never shrinks.
	var gerr error
	d.call(func() {
		if gerr = d.growScratch(bytes); gerr == nil {
			run(true)
		}
	})
	switch {
	case errors.Is(gerr, ErrOutOfMemory):
		return false, nil // A as it is needs no scratch
	case gerr != nil:
		return true, gerr
	}
	return true, err
}

// transposedProduct queues transpose.comp (tk), writing A transposed
// into the scratch (ldt floats a row, bytes in all), then the kernel spec
// reading it, with its fill (planFast: the workspace grown where
// growWork allows, else errGrowWork and nothing queued), on the device
// thread with the scratch large enough. On an error before the product's
// dispatches, what resident calls remember of their bindings is
// forgotten (errGrowWork comes before anything is bound).
func (d *Device) transposedProduct(spec string, tk shaders.Kernel, c, a, b *Matrix, ldt int, bytes int64, growWork bool) error {
	m, k, n := c.Rows, a.Cols, c.Cols
	tr, err := d.programOf(tk)
	if err != nil {
		d.bound = boundState{}
		return err
	}
	p, plan, f, err := d.planFast(spec, m, k, n, growWork)
	if err != nil {
		return err
	}
	scratch := boundRange{d.scratchT, 0, bytes}
	d.clearErrors()
	tr.prog.Use() // a resident product leaves its kernel in use, never the transpose
	offA := d.bind(tr, 0, a, a.Offset, a.span())
	d.bindScratch(tr, 2, scratch)
	if err := tr.transpose(m, ldt, k, a.Stride, ldt, offA, 0, defaultMaxGroups); err != nil {
		d.bound = boundState{}
		return err
	}
	d.bound.prog = 0 // the transpose is in use: runFast puts the kernel in use
	return d.runFast(p, plan, f, ldt, func(q *program) int {
		d.bindScratch(q, 0, scratch)
		return 0
	}, b, c)
}

// growScratch makes the scratch of resident transposes at least bytes
// long (replacing a smaller one); on the device thread, in a call that
// saves the copy bindings (newBuffer binds one).
func (d *Device) growScratch(bytes int64) (err error) {
	if d.scratchBytes >= bytes {
		return nil
	}
	if d.scratchT != 0 {
		d.scratchT.Release()
		d.scratchT, d.scratchBytes = 0, 0
	}
	if d.scratchT, err = d.newBuffer(int(bytes), nil, glw.StaticDraw, "creating a buffer for A's transpose"); err != nil {
		return err
	}
	d.scratchBytes = bytes
	return nil
}

// bindScratch binds r, a range of one of glmul's own buffers, to storage
// binding index for p unless a Scope's last resident call left it bound
// there (as bind does for matrices).
func (d *Device) bindScratch(p *program, index uint32, r boundRange) {
	if !d.bound.valid || d.bound.ranges[index] != r {
		d.bindStorage(p, index, r.buf, r.start, r.size)
	}
	d.bound.ranges[index] = r
}

// Mul computes c = a·b on the GPU (Gemm, or Gemm64 for float64 matrices,
// with no transposes, α = 1, β = 0).
func (c *Matrix) Mul(a, b *Matrix) error {
	if c.f64 {
		return c.Gemm64(blas.NoTrans, blas.NoTrans, 1, a, b, 0)
	}
	return c.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
