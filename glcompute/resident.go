package glcompute

import (
	"github.com/glmul/glmul/glcompute/internal/dispatch"
	"github.com/glmul/glmul/glcompute/internal/glw"
)

// This file dispatches a product on resident matrices (Gemm, MulBatched,
// the fill paths of residentfill.go): the operands bound, the program's
// uniforms set, its chunks dispatched, the barrier and flush after.

// resident runs a product on resident matrices with the program that
// prog returns: it binds a, b and c, lets set set the other uniforms from
// their element offsets in the bound ranges, and dispatches the plan of
// c's m×n result with the barrier after.
func (d *Device) resident(prog func() (*program, error), a, b, c *Matrix, set func(p *program, offA, offB, offC int)) error {
	var err error
	d.callKeeping(func() {
		var p *program
		if p, err = prog(); err != nil {
			d.bound = boundState{}
			return
		}
		var plan dispatch.Plan
		if plan, err = p.plan(c.Rows, c.Cols, defaultMaxGroups); err != nil {
			d.bound = boundState{}
			return
		}
		d.clearErrors()
		err = d.dispatchResident(p, plan, func() {
			offA, offB, offC := d.bindOperands(p, a, b, c)
			set(p, offA, offB, offC)
		})
	})
	return err
}

// dispatchResident runs a resident product's plan with program p: p in
// use (unless a Scope's last call left it so), bindAndSet binding its
// operands and setting its uniforms, the dispatches and the barrier after
// them (dispatchPlan); then it records what stays bound. On the device
// thread.
func (d *Device) dispatchResident(p *program, plan dispatch.Plan, bindAndSet func()) error {
	if !d.bound.valid || d.bound.prog != p.prog {
		p.prog.Use()
	}
	bindAndSet()
	err := d.dispatchPlan(p, plan)
	// Inside a Scope what is bound stays for the next resident call;
	// outside, a borrowed call's restore or an owned call's unbinding
	// undoes it. Texture-reading kernels detach their textures.
	d.bound.valid = d.scoped && err == nil && !p.kernel.Textures
	d.bound.prog = p.prog
	return err
}

// fastLayout reports whether the fast kernel can run on m as it lies: it
// reads and writes whole vec4s of rows up to the stride, so the rows must
// be compact (no gap for it to overwrite) and start on vec4 boundaries of
// the bound range.
func fastLayout(m *Matrix) bool {
	return m.Stride == m.Cols && m.Cols%4 == 0 && m.Offset%4 == 0
}

// bindOperands binds a, b and c to storage bindings 0, 1 and 2 for p (and
// textures, for a kernel that reads through them) and returns
// their element offsets within the bound ranges; on the device thread.
func (d *Device) bindOperands(p *program, a, b, c *Matrix) (offA, offB, offC int) {
	return d.bindMatrix(p, 0, a), d.bindMatrix(p, 1, b), d.bindMatrix(p, 2, c)
}

// bindMatrix binds m's elements (bind) and returns its element offset in
// the bound range; a float64 matrix over its words, its offset in
// doubles (the range starts on the driver's offset alignment, at least 4
// bytes, from an even word: a whole double).
func (d *Device) bindMatrix(p *program, index uint32, m *Matrix) int {
	if m.f64 {
		return d.bind(p, index, m, 2*m.Offset, 2*m.span()) / 2
	}
	return d.bind(p, index, m, m.Offset, m.span())
}

// setResidentFast sets a fast kernel's uniforms for the resident product
// c = A·b, A of c.Rows rows (or their transpose) lda apart: the element
// offsets of A, b and c in their bound ranges, and no K split.
func setResidentFast(p *program, c *Matrix, lda int, b *Matrix, offA, offB, offC int) {
	p.setUints(uniform{"M", c.Rows}, uniform{"K", b.Rows}, uniform{"N", c.Cols}, uniform{"lda", lda},
		uniform{"ldb", b.Stride}, uniform{"ldc", c.Stride}, uniform{"offA4", offA / 4}, uniform{"offB4", offB / 4},
		uniform{"offC4", offC / 4}, uniform{"ksplit", b.Rows})
}

// dispatchPlan runs the chunks of plan with program p (in use, its
// bindings and other uniforms set), puts the memory barrier after them
// and checks for GL errors; on the device thread.
func (d *Device) dispatchPlan(p *program, plan dispatch.Plan) error {
	p.dispatchChunks(plan)
	return d.finishDispatch(p)
}

// finishDispatch puts the barrier after a resident call's dispatches
// (every kind of later use; inside a Scope only glmul's own later
// products, the Scope's end adding the rest), flushes them to the GPU,
// checks for GL errors and, on an owned context, unbinds the program; on
// the device thread.
//
// The flush is a driver workaround, not a wait: on one NVIDIA driver, a
// buffer that a dispatch bound as shader storage while a glBufferData or
// glBufferSubData of it was still unflushed ignores the next
// glBufferSubData (the host's, say) until a later one: the next dispatch
// reads the older contents. A glFlush after the dispatch prevents it, at a
// few µs a call (TestHostWriteAfterProduct; docs/DRIVERS.md, "NVIDIA and
// glBufferSubData").
func (d *Device) finishDispatch(p *program) error {
	if d.scoped {
		glw.BarrierStorage()
	} else {
		glw.BarrierAll()
	}
	glw.Flush()
	d.detachTextures()
	var err error
	if !d.borrowed { // no error reading on a borrowed context
		err = d.checkError("dispatching " + p.kernel.File)
	}
	if !d.borrowed && !d.scoped {
		glw.Program(0).Use()
	}
	return err
}
