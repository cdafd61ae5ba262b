package glcompute

import (
	"fmt"
	"math"
	"unsafe"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/staging"
)

// Matrix is a row-major float32 matrix in a GPU buffer: one the Device
// made (NewMatrix) or a host's own (WrapBuffer); or a float64 one
// (NewMatrix64, whose methods are the ...64 ones: matrix64.go). Element
// (i, j) is element Offset + i·Stride + j of the buffer; the caller may change Rows, Cols,
// Stride and Offset to view another part of it, and every call panics
// where they reach past its end. Only the range a product uses is bound,
// so a matrix may sit anywhere in a buffer of any size; it must fit one
// shader storage block (Info.MaxSSBOBlockSize).
//
// Thread rule: as the Device's methods (any goroutine for an owned
// context; the host's GL thread for a borrowed one).
type Matrix struct {
	Rows, Cols int
	Stride     int // elements from one row to the next, ≥ Cols
	Offset     int // elements from the start of the buffer

	d     *Device
	buf   glw.Buffer
	size  int64 // the buffer's size in bytes
	owned bool  // made by NewMatrix: Release deletes the buffer
	f64   bool  // float64 elements (NewMatrix64)
}

// NewMatrix creates a rows×cols matrix in a new buffer (it panics where
// rows or cols is below 1); its contents are
// undefined until written (Upload, Gemm, ...). Release it when done. It
// returns an error matching ErrTooLarge when the matrix is over one shader
// storage block, and ErrOutOfMemory when the driver refuses the allocation
// (on a borrowed context too, without reading the host's GL error flag).
// Some drivers commit memory lazily and refuse nothing here: NVIDIA 580
// accepts even a 16 TiB buffer, and running out shows only later.
func (d *Device) NewMatrix(rows, cols int) (*Matrix, error) {
	if rows < 1 || cols < 1 {
		panic("glcompute: matrix dimension below 1")
	}
	return d.newMatrix(rows, cols, "float32")
}

// newMatrix creates a rows×cols float32 matrix, or the words of a
// float64 one of half the columns (what: its type, for errors).
func (d *Device) newMatrix(rows, cols int, what string) (*Matrix, error) {
	bytes, ok := floatBytes(rows, cols)
	if !ok {
		return nil, fmt.Errorf("%w: a %d×%d matrix has more elements than any buffer can hold", ErrTooLarge, rows, cols)
	}
	if err := d.checkBlock(fmt.Sprintf("a %s matrix of %d rows is", what, rows), bytes); err != nil {
		return nil, err
	}
	m := &Matrix{Rows: rows, Cols: cols, Stride: cols, d: d, owned: true, size: bytes}
	var err error
	d.call(func() {
		m.buf, err = d.newBuffer(int(bytes), nil, glw.StaticDraw, "creating a matrix buffer")
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// newBuffer creates a storage buffer of size bytes holding data (nil:
// undefined); on the device thread. Out of memory is detected from the
// buffer's size, not glGetError, so it works on a borrowed context.
func (d *Device) newBuffer(size int, data unsafe.Pointer, usage uint32, what string) (glw.Buffer, error) {
	d.clearErrors()
	b, ok := glw.NewStorageBuffer(size, data, usage)
	if !ok {
		return 0, fmt.Errorf("%w: %s: the driver could not allocate %s", ErrOutOfMemory, what, formatBytes(float64(size)))
	}
	if err := d.checkError(what); err != nil {
		b.Release()
		return 0, err
	}
	return b, nil
}

// WrapBuffer returns a Matrix over the host's buffer object buffer, in
// place and without a copy: rows×cols elements with row stride stride,
// starting offset floats into the buffer. The buffer may be of any size;
// the matrix must fit one shader storage block. Release forgets the Matrix
// but leaves the buffer to the host. The buffer's size is read here, once,
// for the checks of every later call: a buffer the host re-specifies
// (glBufferData) needs a new WrapBuffer.
//
// It panics on a negative offset, a stride below cols, a name that is not a
// buffer of the context, or a matrix that runs past the buffer's end
// (programmer errors, as gonum's are); it returns an error matching
// ErrTooLarge if the matrix spans more than one shader storage block.
func (d *Device) WrapBuffer(buffer uint32, offset, rows, cols, stride int) (*Matrix, error) {
	d.mustBeOpen()
	if rows < 1 || cols < 1 || stride < cols || offset < 0 {
		panic("glcompute: bad shape for WrapBuffer")
	}
	m := &Matrix{Rows: rows, Cols: cols, Stride: stride, Offset: offset, d: d, buf: glw.Buffer(buffer)}
	if _, ok := m.end(); !ok {
		return nil, fmt.Errorf("%w: WrapBuffer: a %d×%d matrix with stride %d at offset %d lies beyond any buffer", ErrTooLarge, rows, cols, stride, offset)
	}
	if err := d.checkExtent(fmt.Sprintf("WrapBuffer: the %d×%d matrix with stride %d", rows, cols, stride), offset, m.span()); err != nil {
		return nil, err
	}
	var isBuffer bool
	size := func() {
		if isBuffer = glw.IsBuffer(buffer); isBuffer {
			if d.named {
				m.size = m.buf.NamedSize()
			} else {
				m.size = m.buf.Size()
				glw.Flush() // see glw.Buffer.NamedSize: the bind must not meet an unflushed write
			}
		}
	}
	if d.named {
		d.query(size) // binds nothing: no state to save
	} else {
		d.call(size)
	}
	switch {
	case !isBuffer:
		panic("glcompute: WrapBuffer: not a buffer object of this context")
	case !m.inBuffer():
		panic("glcompute: WrapBuffer: the matrix runs past the end of the buffer")
	}
	return m, nil
}

// Buffer returns the buffer object that holds m.
func (m *Matrix) Buffer() uint32 { return uint32(m.buf) }

// check panics unless m is a live matrix of d whose exported fields
// (changed by the caller to view a part of the buffer, say) still describe
// a matrix inside its buffer: past the end, a product read zeros (or a
// stale staging buffer) and wrote nowhere, and GL's INVALID_VALUE was
// left in a host's error flag.
func (m *Matrix) check(d *Device) {
	m.checkLive(d)
	if m.Rows < 1 || m.Cols < 1 || m.Stride < m.Cols || m.Offset < 0 {
		panic(fmt.Sprintf("glcompute: Matrix with Rows %d, Cols %d, Stride %d, Offset %d: rows and columns must be at least 1, Stride at least Cols, Offset at least 0", m.Rows, m.Cols, m.Stride, m.Offset))
	}
	if !m.inBuffer() {
		panic(fmt.Sprintf("glcompute: a %d×%d Matrix with Stride %d at Offset %d runs past the end of its buffer (%d bytes): Rows, Cols, Stride and Offset may describe any part of the buffer, no more", m.Rows, m.Cols, m.Stride, m.Offset, m.size))
	}
}

// checkView is check for a matrix that Gemm, Upload and Download accept
// with no rows or no columns (empty reports so): such a view has no
// element to lie past its buffer's end, but no field may be negative, nor
// Stride below Cols.
func (m *Matrix) checkView(d *Device) (empty bool) {
	if m.Rows != 0 && m.Cols != 0 {
		m.check(d)
		return false
	}
	m.checkLive(d)
	if m.Rows < 0 || m.Cols < 0 || m.Stride < m.Cols || m.Offset < 0 {
		panic(fmt.Sprintf("glcompute: Matrix with Rows %d, Cols %d, Stride %d, Offset %d: none may be negative, and Stride at least Cols", m.Rows, m.Cols, m.Stride, m.Offset))
	}
	return true
}

// end is the index of the byte past m's last element in its buffer, ok
// false where it does not fit an int64 (Rows, Cols, Stride and Offset
// checked first).
func (m *Matrix) end() (end int64, ok bool) {
	body, ok := floatBytes(m.Rows-1, m.Stride) // the rows before the last
	if !ok || body/4 > math.MaxInt64/4-int64(m.Offset)-int64(m.Cols) {
		return 0, false
	}
	return 4 * (int64(m.Offset) + body/4 + int64(m.Cols)), true
}

// inBuffer reports whether m's elements all lie inside its buffer.
func (m *Matrix) inBuffer() bool {
	if m.f64 {
		w, ok := m.words()
		return ok && w.inBuffer()
	}
	end, ok := m.end()
	return ok && end <= m.size
}

// checkLive panics unless m is a live matrix of d. Batched products,
// which ignore m's shape (Batch gives it), check no more here.
func (m *Matrix) checkLive(d *Device) {
	if m.d == nil {
		panic("glcompute: use of a released Matrix")
	}
	if m.d != d {
		panic("glcompute: Matrix of another Device")
	}
}

// span is the number of floats from m's first element to one past its last.
func (m *Matrix) span() int { return (m.Rows-1)*m.Stride + m.Cols }

// bind binds floats [first, first+count) of m's buffer to storage binding
// index for p (bindStorage) as a range that starts on the driver's offset
// alignment, and
// returns the element offset of float first within that range; on the
// device thread. The caller has checked that count floats fit one block
// (d.checkExtent).
func (d *Device) bind(p *program, index uint32, m *Matrix, first, count int) (elemOffset int) {
	align := int64(d.bindAlign)
	start := 4 * int64(first) / align * align
	end := min(4*int64(first+count), m.size)
	// Inside a Scope a range the previous resident call left bound stays
	// (d.bound); a texture-reading kernel binds anyway, for its textures.
	r := boundRange{m.buf, start, end - start}
	if !d.bound.valid || d.bound.ranges[index] != r || p.kernel.Textures {
		d.bindStorage(p, index, m.buf, start, end-start)
	}
	d.bound.ranges[index] = r
	return first - int(start/4)
}

// checkExtent returns ErrTooLarge if count floats from first, bound as
// bind binds them (from the alignment boundary below first), do not fit
// one block.
func (d *Device) checkExtent(what string, first, count int) error {
	return d.checkBlock(what+" spans", d.extent(first, count))
}

// extent is the bytes that bind binds for count floats from first.
func (d *Device) extent(first, count int) int64 {
	align := int64(d.bindAlign)
	return 4*int64(first+count) - 4*int64(first)/align*align
}

// directUploadBytes is the largest matrix (Rows·Cols·4 bytes) that Upload
// hands to glBufferSubData straight from Go memory rather than through the
// staging buffers.
const directUploadBytes = 1 << 20

// Upload copies src, which must have m's shape, into m (nothing, where m
// is a view with no rows or columns). Only m's elements are written: the gaps of a stride wider than Cols and the rest of the
// buffer keep their contents. It queues the copy and returns without
// waiting for the GPU, as glBufferSubData does: src may be reused at once.
// Matrices up to directUploadBytes go through glBufferSubData (one call,
// or one a row where m's stride leaves gaps); larger ones through two
// staging buffers in host-visible memory (glBufferSubData for a row larger
// than one; on OpenGL ES, such a row in pieces), which wait for the GPU
// only when both still hold copies it has not made yet: back-to-back
// uploads of more than twice the staging size (Options.StagingBytes)
// wait, smaller ones do not.
func (m *Matrix) Upload(src blas32.General) error {
	m.mustBe(false, "Upload")
	staged := func(st *staging.Stager, v staging.View) error { return st.Upload(v, src) }
	if 4*int64(m.Rows)*int64(m.Cols) <= directUploadBytes {
		staged = nil
	}
	return m.transfer(src, "uploading a matrix", staged, m.buf.WriteAt)
}

// Download copies m into dst, which must have m's shape, through the
// staging buffers (glGetBufferSubData for a row larger than one; on
// OpenGL ES, which lacks it, such a row in pieces); dst's
// stride gaps are left alone. It waits for the GPU work that writes m: a
// stall, meant for tests and final results.
func (m *Matrix) Download(dst blas32.General) error {
	m.mustBe(false, "Download")
	return m.transfer(dst, "downloading a matrix", func(st *staging.Stager, v staging.View) error { return st.Download(dst, v) },
		func(offset, size int, host unsafe.Pointer) {
			glw.BarrierBufferRead()
			m.buf.Read(offset, size, host)
		})
}

// transfer checks host and, on the device thread, moves m's elements
// with staged (through the staging buffers) or, where staged is nil or a
// row is larger than a staging buffer (but on ES), with direct over the
// blocks of eachBlock; GL errors are reported as what.
func (m *Matrix) transfer(host blas32.General, what string, staged func(*staging.Stager, staging.View) error, direct func(offset, size int, host unsafe.Pointer)) error {
	empty := m.checkView(m.d)
	if host.Rows != m.Rows || host.Cols != m.Cols {
		panic("glcompute: Upload or Download: shapes differ")
	}
	if empty { // no element to move
		checkOperand(host)
		m.d.checkOpen()
		return nil
	}
	checkGeneral(host)
	var err error
	m.d.call(func() {
		m.d.clearErrors()
		switch st := m.d.stage(); {
		case staged == nil:
			m.eachBlock(host, direct)
		case 4*m.Stride <= st.Bytes || m.d.info.ES:
			// A row larger than a staging buffer goes through it in pieces
			// on ES, which has no glGetBufferSubData.
			err = staged(st, staging.View{Buf: m.buf, Off: m.Offset, Stride: m.Stride, KeepGaps: true})
		default:
			m.eachBlock(host, direct)
		}
		if err == nil {
			err = m.d.checkError(what)
		}
	})
	return err
}

// eachBlock calls copy for the blocks in which m and the host matrix g
// (of m's shape) correspond: one block when both are compact or a single
// row, else one a row, so that neither side's stride gaps are copied.
// Offsets and sizes are in bytes of m's buffer.
func (m *Matrix) eachBlock(g blas32.General, copy func(offset, size int, host unsafe.Pointer)) {
	if m.Rows == 1 || m.Stride == m.Cols && g.Stride == g.Cols {
		copy(4*m.Offset, 4*m.span(), unsafe.Pointer(&g.Data[0]))
		return
	}
	for i := 0; i < m.Rows; i++ {
		copy(4*(m.Offset+i*m.Stride), 4*m.Cols, unsafe.Pointer(&g.Data[i*g.Stride]))
	}
}

// Release deletes a buffer made by NewMatrix (a wrapped one stays the
// host's). Idempotent, and safe after the Device's Release: an owned
// Device's buffers went with its context; a borrowed Device's are deleted
// here, on the host's thread.
func (m *Matrix) Release() {
	if m.d != nil && m.owned {
		m.d.releaseObject(m.buf.Release)
	}
	m.d = nil
}
