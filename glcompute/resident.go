package glcompute

import (
	"fmt"
	"math"
	"time"
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/internal/dispatch"
	"github.com/glmul/glmul/shaders"
)

// Matrix is a row-major float32 matrix that lives in a GPU buffer: one the
// Device made (NewMatrix) or a host's own (WrapBuffer). Element (i, j) is
// float number Offset + i·Stride + j of the buffer.
//
// Thread rule: as the Device's methods (any goroutine for an owned context;
// the host's GL thread for a borrowed one).
type Matrix struct {
	Rows, Cols int
	Stride     int // elements from one row to the next, ≥ Cols
	Offset     int // elements from the start of the buffer

	d     *Device
	buf   glw.Buffer
	owned bool // made by NewMatrix: Release deletes the buffer
}

// NewMatrix creates a rows×cols matrix in a new buffer; its contents are
// undefined until written (Upload, Gemm, ...). Release it when done.
func (d *Device) NewMatrix(rows, cols int) (*Matrix, error) {
	if rows < 1 || cols < 1 {
		panic("glcompute: matrix dimension below 1")
	}
	bytes := 4 * float64(rows) * float64(cols)
	if bytes > float64(d.info.MaxSSBOBlockSize) {
		return nil, fmt.Errorf("%w: a %d×%d float32 matrix is %s, over the driver's largest shader storage block (%s)",
			ErrTooLarge, rows, cols, formatBytes(bytes), formatBytes(float64(d.info.MaxSSBOBlockSize)))
	}
	m := &Matrix{Rows: rows, Cols: cols, Stride: cols, d: d, owned: true}
	var err error
	d.call(func() {
		d.clearErrors()
		m.buf = glw.NewStorageBuffer(4*rows*cols, nil, glw.StaticDraw)
		if err = d.checkError("creating a matrix buffer"); err != nil {
			m.buf.Release()
		}
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// WrapBuffer returns a Matrix over the host's buffer object buffer, in
// place and without a copy: rows×cols elements with row stride stride,
// starting offset floats into the buffer. Release forgets the Matrix but
// leaves the buffer to the host.
func (d *Device) WrapBuffer(buffer uint32, offset, rows, cols, stride int) (*Matrix, error) {
	if rows < 1 || cols < 1 || stride < cols || offset < 0 {
		panic("glcompute: bad shape for WrapBuffer")
	}
	m := &Matrix{Rows: rows, Cols: cols, Stride: stride, Offset: offset, d: d, buf: glw.Buffer(buffer)}
	var err error
	d.call(func() {
		if !glw.IsBuffer(buffer) {
			err = fmt.Errorf("glcompute: WrapBuffer: %d is not a buffer object of this context", buffer)
			return
		}
		need := 4 * int64(offset+(rows-1)*stride+cols)
		size := m.buf.Size()
		switch {
		case size < need:
			err = fmt.Errorf("glcompute: WrapBuffer: buffer %d holds %d bytes; the %d×%d matrix at offset %d with stride %d needs %d",
				buffer, size, rows, cols, offset, stride, need)
		case size > d.info.MaxSSBOBlockSize:
			// glmul binds whole buffers; a larger one cannot be bound
			// (and a borrowed Device would not see the GL error).
			err = fmt.Errorf("%w: WrapBuffer: buffer %d is %s, over the driver's largest shader storage block (%s); wrap a buffer of at most that size",
				ErrTooLarge, buffer, formatBytes(float64(size)), formatBytes(float64(d.info.MaxSSBOBlockSize)))
		}
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Buffer returns the buffer object that holds m.
func (m *Matrix) Buffer() uint32 { return uint32(m.buf) }

func (m *Matrix) check(d *Device) {
	if m.d == nil {
		panic("glcompute: use of a released Matrix")
	}
	if m.d != d {
		panic("glcompute: Matrix of another Device")
	}
}

// span is the number of floats from m's first element to one past its last.
func (m *Matrix) span() int { return (m.Rows-1)*m.Stride + m.Cols }

// Upload copies src, which must have m's shape, into m (glBufferSubData).
func (m *Matrix) Upload(src blas32.General) error {
	m.check(m.d)
	if src.Rows != m.Rows || src.Cols != m.Cols {
		panic("glcompute: Upload: shapes differ")
	}
	checkGeneral(src)
	var err error
	m.d.call(func() {
		m.d.clearErrors()
		if src.Stride == m.Stride {
			m.buf.WriteAt(4*m.Offset, 4*m.span(), unsafe.Pointer(&src.Data[0]))
		} else {
			for i := 0; i < m.Rows; i++ {
				m.buf.WriteAt(4*(m.Offset+i*m.Stride), 4*m.Cols, unsafe.Pointer(&src.Data[i*src.Stride]))
			}
		}
		err = m.d.checkError("uploading a matrix")
	})
	return err
}

// Download copies m into dst, which must have m's shape. It waits for the
// GPU work that writes m: a stall, meant for tests and final results.
func (m *Matrix) Download(dst blas32.General) error {
	m.check(m.d)
	if dst.Rows != m.Rows || dst.Cols != m.Cols {
		panic("glcompute: Download: shapes differ")
	}
	checkGeneral(dst)
	var err error
	m.d.call(func() {
		m.d.clearErrors()
		glw.BarrierBufferRead()
		if dst.Stride == m.Stride {
			m.buf.Read(4*m.Offset, 4*m.span(), unsafe.Pointer(&dst.Data[0]))
		} else {
			for i := 0; i < m.Rows; i++ {
				m.buf.Read(4*(m.Offset+i*m.Stride), 4*m.Cols, unsafe.Pointer(&dst.Data[i*dst.Stride]))
			}
		}
		err = m.d.checkError("downloading a matrix")
	})
	return err
}

// Release deletes a buffer made by NewMatrix (a wrapped one stays the
// host's). Idempotent.
func (m *Matrix) Release() {
	if m.d == nil {
		return
	}
	if m.owned {
		m.d.call(func() { m.buf.Release() })
	}
	m.d = nil
}

// Gemm computes c = α·op(A)·op(B) + β·c on the GPU, gonum's Sgemm on
// resident matrices: op(A) is c.Rows×K, op(B) is K×c.Cols, op(X) = X or Xᵀ.
// β = 0 overwrites c without reading it; α = 0 does not read A or B. c must
// not overlap a or b.
//
// Gemm only queues work: no readback, no glFinish; it returns at once.
// With no transposes, α = 1, β = 0 and compact matrices whose rows are
// multiples of 4 floats starting on 4-float boundaries, it runs the
// device's fast kernel; otherwise the general gemm.comp. A
// memory barrier after the dispatches makes c visible to any later draw,
// compute pass or buffer read; use Device.Fence to learn when it is done.
func (c *Matrix) Gemm(tA, tB blas.Transpose, alpha float32, a, b *Matrix, beta float32) error {
	d := c.d
	c.check(d)
	a.check(d)
	b.check(d)
	m, n := c.Rows, c.Cols
	am, ak := a.Rows, a.Cols
	if tA == blas.Trans || tA == blas.ConjTrans {
		am, ak = a.Cols, a.Rows
	}
	bk, bn := b.Rows, b.Cols
	if tB == blas.Trans || tB == blas.ConjTrans {
		bk, bn = b.Cols, b.Rows
	}
	if am != m || bn != n || ak != bk {
		panic("glcompute: Gemm: shapes of op(A), op(B) and C disagree")
	}
	if math.IsNaN(float64(alpha)) || math.IsNaN(float64(beta)) {
		panic("glcompute: Gemm: α or β is NaN")
	}
	if tA == blas.NoTrans && tB == blas.NoTrans && alpha == 1 && beta == 0 && fastLayout(a) && fastLayout(b) && fastLayout(c) {
		return d.mulFast(c, a, b)
	}
	var err error
	d.call(func() {
		var p *program
		if p, err = d.programOf(shaders.GEMM()); err != nil {
			return
		}
		plan, perr := dispatch.New(m, n, 64, 64, DefaultMaxGroups)
		if perr != nil {
			err = perr
			return
		}
		d.clearErrors()
		p.prog.Use()
		set := func(name string, v int) { p.setUint(name, uint32(v)) }
		set("M", m)
		set("N", n)
		set("K", ak)
		set("lda", a.Stride)
		set("ldb", b.Stride)
		set("ldc", c.Stride)
		set("offA", a.Offset)
		set("offB", b.Offset)
		set("offC", c.Offset)
		glw.SetInt(p.loc("transA"), boolInt(tA != blas.NoTrans))
		glw.SetInt(p.loc("transB"), boolInt(tB != blas.NoTrans))
		glw.SetFloat(p.loc("alpha"), alpha)
		glw.SetFloat(p.loc("beta"), beta)
		err = d.dispatchOn(p, plan, a, b, c)
	})
	return err
}

// fastLayout reports whether the fast kernel can run on m as it lies: it
// reads and writes whole vec4s of rows up to the stride, so the rows must
// be compact (no gap for it to overwrite) and start on vec4 boundaries.
func fastLayout(m *Matrix) bool {
	return m.Stride == m.Cols && m.Cols%4 == 0 && m.Offset%4 == 0
}

// mulFast runs c = a·b with the device's fast kernel on resident matrices.
func (d *Device) mulFast(c, a, b *Matrix) error {
	var err error
	d.call(func() {
		var p *program
		if p, err = d.program(d.kernelFor(c.Rows, a.Cols, c.Cols)); err != nil {
			return
		}
		plan, perr := dispatch.New(c.Rows, c.Cols, p.kernel.TileM, p.kernel.TileN, DefaultMaxGroups)
		if perr != nil {
			err = perr
			return
		}
		d.clearErrors()
		p.prog.Use()
		set := func(name string, v int) { p.setUint(name, uint32(v)) }
		set("m", c.Rows)
		set("n", a.Cols)
		set("l", c.Cols)
		set("lda", a.Stride)
		set("ldb", b.Stride)
		set("ldc", c.Stride)
		set("offA4", a.Offset/4)
		set("offB4", b.Offset/4)
		set("offC4", c.Offset/4)
		set("ksplit", a.Cols) // no split on the resident path
		err = d.dispatchOn(p, plan, a, b, c)
	})
	return err
}

// dispatchOn binds a, b and c to storage bindings 0, 1 and 2, runs the
// chunks of plan with program p (already in use, its other uniforms set),
// puts a memory barrier after them, and checks for GL errors; on the
// device thread.
func (d *Device) dispatchOn(p *program, plan dispatch.Plan, a, b, c *Matrix) error {
	a.buf.BindStorage(0)
	b.buf.BindStorage(1)
	c.buf.BindStorage(2)
	for _, ch := range plan.Chunks {
		p.setUint("x0", uint32(ch.X0))
		p.setUint("y0", uint32(ch.Y0))
		glw.Dispatch(ch.GroupsX, ch.GroupsY)
	}
	glw.BarrierAll()
	err := d.checkError("dispatching " + p.kernel.File)
	if !d.borrowed {
		glw.Program(0).Use()
	}
	return err
}

// Mul computes c = a·b on the GPU (Gemm with no transposes, α = 1, β = 0).
func (c *Matrix) Mul(a, b *Matrix) error { return c.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0) }

func boolInt(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// Batch describes Count small products C[i] = A[i]·B[i], each M×K by K×N
// (1 to 32 each), row-major and compact, consecutive matrices StrideA,
// StrideB, StrideC elements apart (zero: M·K, K·N, M·N, packed back to
// back), counted from each Matrix's Offset.
type Batch struct {
	Count, M, K, N            int
	StrideA, StrideB, StrideC int
}

// MulBatched queues the products of bt, reading the batch from the buffers
// of a and b and writing c's; the three Matrix shapes are ignored, only
// their buffers and offsets count, and every product must lie within its
// buffer. Like Gemm it returns at once, with a memory barrier after.
func (d *Device) MulBatched(c, a, b *Matrix, bt Batch) error {
	c.check(d)
	a.check(d)
	b.check(d)
	if bt.Count < 1 || bt.M < 1 || bt.K < 1 || bt.N < 1 || bt.M > 32 || bt.K > 32 || bt.N > 32 {
		panic("glcompute: MulBatched: Count ≥ 1 and sizes 1…32 required")
	}
	if bt.StrideA == 0 {
		bt.StrideA = bt.M * bt.K
	}
	if bt.StrideB == 0 {
		bt.StrideB = bt.K * bt.N
	}
	if bt.StrideC == 0 {
		bt.StrideC = bt.M * bt.N
	}
	total := bt.Count * bt.M * bt.N
	var err error
	d.call(func() {
		for _, x := range []struct {
			name           string
			m              *Matrix
			stride, extent int
		}{{"A", a, bt.StrideA, bt.M * bt.K}, {"B", b, bt.StrideB, bt.K * bt.N}, {"C", c, bt.StrideC, bt.M * bt.N}} {
			need := 4 * int64(x.m.Offset+(bt.Count-1)*x.stride+x.extent)
			if size := x.m.buf.Size(); size < need {
				err = fmt.Errorf("glcompute: MulBatched: the batch of %s needs %d bytes of its buffer, which holds %d", x.name, need, size)
				return
			}
		}
		var p *program
		if p, err = d.programOf(shaders.Batched()); err != nil {
			return
		}
		d.clearErrors()
		p.prog.Use()
		set := func(name string, v int) { p.setUint(name, uint32(v)) }
		set("M", bt.M)
		set("N", bt.N)
		set("K", bt.K)
		set("count", bt.Count)
		set("strideA", bt.StrideA)
		set("strideB", bt.StrideB)
		set("strideC", bt.StrideC)
		set("offA", a.Offset)
		set("offB", b.Offset)
		set("offC", c.Offset)
		a.buf.BindStorage(0)
		b.buf.BindStorage(1)
		c.buf.BindStorage(2)
		// 256 invocations a group, up to 65535×64 groups per dispatch.
		groups := (total + 255) / 256
		const maxX, maxY = 65535, 64
		for first := 0; first < groups; first += maxX * maxY {
			g := min(groups-first, maxX*maxY)
			set("first", first*256)
			gx := min(g, maxX)
			glw.Dispatch(gx, (g+gx-1)/gx)
		}
		glw.BarrierAll()
		err = d.checkError("dispatching batched.comp")
		if !d.borrowed {
			glw.Program(0).Use()
		}
	})
	return err
}

// Fence marks the GPU work queued so far (glFenceSync).
type Fence struct {
	d *Device
	f glw.Fence
}

// Fence returns a fence after all work queued on the Device until now.
func (d *Device) Fence() *Fence {
	f := &Fence{d: d}
	d.call(func() {
		f.f = glw.NewFence()
		glw.Flush()
	})
	return f
}

// Wait waits up to timeout for the fence and reports whether it passed.
// Wait(0) polls without blocking.
func (f *Fence) Wait(timeout time.Duration) bool {
	var ok bool
	f.d.call(func() { ok = f.f.Signaled(uint64(timeout.Nanoseconds())) })
	return ok
}

// Release deletes the fence. Idempotent.
func (f *Fence) Release() {
	if f.f != 0 {
		f.d.call(func() { f.f.Release() })
	}
}
