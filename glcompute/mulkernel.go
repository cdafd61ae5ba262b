package glcompute

import (
	"fmt"

	"gonum.org/v1/gonum/blas"

	"github.com/glmul/glmul/shaders"
)

// mulKernel computes c = a·b on resident matrices, as Gemm(NoTrans,
// NoTrans, 1, a, b, 0) does, with the kernel that spec names ("" or
// "fast": Gemm's choice). The matrices must have the fast kernel's layout
// (compact rows of a multiple of 4 floats on 4-float boundaries) and, for
// tiled32, start their buffers. It returns an error matching
// ErrUnsupported for a spec the device cannot run or matrices it cannot
// read. Like Gemm it only queues work.
//
// It panics if the shapes disagree or c's elements share floats with a's
// or b's.
func (c *Matrix) mulKernel(spec string, a, b *Matrix) error {
	if spec == "" || spec == "fast" || c.Rows == 0 || c.Cols == 0 || a.Cols == 0 {
		return c.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0)
	}
	d := c.d
	c.check(d)
	a.check(d)
	b.check(d)
	if a.Rows != c.Rows || b.Cols != c.Cols || a.Cols != b.Rows {
		panic("glcompute: mulKernel: shapes of A, B and C disagree")
	}
	if overlaps(c, c.Offset, c.span(), a, a.Offset, a.span()) || overlaps(c, c.Offset, c.span(), b, b.Offset, b.span()) {
		panic("glcompute: mulKernel: C overlaps A or B")
	}
	k, err := shaders.Lookup(spec)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	if !fastLayout(a) || !fastLayout(b) || !fastLayout(c) {
		return fmt.Errorf("%w: kernel %s on resident matrices needs compact rows of a multiple of 4 floats", ErrUnsupported, spec)
	}
	if !k.Strided && a.Offset+b.Offset+c.Offset != 0 {
		return fmt.Errorf("%w: kernel %s reads matrices only at the start of their buffers", ErrUnsupported, spec)
	}
	if k.TransposeA {
		if ran, err := d.mulTransposed(spec, c, a, b); ran {
			return err
		}
		spec = d.natural(spec, c.Rows, a.Cols, c.Cols)
		k, _ = shaders.Lookup(spec)
	}
	if k.Strided && d.kSlices(k, a.Cols) > 1 {
		return d.mulFilled(spec, c, a, b) // split as the driver's loop budget needs (loops.go)
	}
	if k.Strided {
		return d.resident(func() (*program, error) { return d.programNamed(spec) }, a, b, c,
			func(p *program, offA, offB, offC int) { setResidentFast(p, c, a.Stride, b, offA, offB, offC) })
	}
	if d.kSlices(k, a.Cols) > 1 {
		return d.errLoopBudget(k, a.Cols)
	}
	return d.resident(func() (*program, error) { return d.programNamed(spec) }, a, b, c,
		func(p *program, _, _, _ int) {
			p.setUints(uniform{"M", c.Rows}, uniform{"K", a.Cols}, uniform{"N", c.Cols})
		})
}
