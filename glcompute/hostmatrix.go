package glcompute

import (
	"fmt"
	"math"
	"unsafe"

	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/staging"
	"github.com/glmul/glmul/internal/cause"
)

// hostMatrix is a pinned.Matrix's memory: a float32 matrix whose Data is
// a persistent, coherent mapping of a GL buffer, which Mul copies with
// the GPU (or the kernel reads and writes directly) instead of a host
// copy into staging. Rows are padded to a multiple of 4 floats.
type hostMatrix struct {
	blas32.General
	d   *Device
	buf glw.Buffer
}

// newHostMatrix allocates a rows×cols hostMatrix, zero-filled
// (pinned.New). It returns an error matching ErrUnsupported where the
// driver cannot map buffers persistently, ErrTooLarge past any buffer and
// ErrOutOfMemory where it refuses the memory.
func (d *Device) newHostMatrix(rows, cols int) (*hostMatrix, error) {
	if rows < 1 || cols < 1 {
		panic("glcompute: matrix dimension below 1")
	}
	stride := roundUp(cols, 4)
	bytes64, ok := floatBytes(rows, stride)
	if !ok || bytes64 > math.MaxInt {
		return nil, fmt.Errorf("%w: a %d×%d host matrix has more elements than any buffer can hold", ErrTooLarge, rows, cols)
	}
	h := &hostMatrix{General: blas32.General{Rows: rows, Cols: cols, Stride: stride}, d: d}
	var err error
	d.call(func() {
		if !d.stage().Persistent {
			err = cause.Mark(fmt.Errorf("%w: a pinned matrix needs persistent buffer mappings (glBufferStorage: OpenGL 4.4 or ARB_buffer_storage; not OpenGL ES), which this driver or Options.NoPersistentMapping rules out", ErrUnsupported), cause.NoPersistentMapping)
			return
		}
		bytes := int(bytes64)
		buf, ptr, ok := glw.NewMappedBuffer(bytes, glw.MapReadWrite, d.stage().Storage)
		if !ok {
			err = fmt.Errorf("%w: a %d×%d host matrix (%s of mapped memory)", ErrOutOfMemory, rows, cols, formatBytes(float64(bytes)))
			return
		}
		h.buf, h.Data = buf, unsafe.Slice((*float32)(ptr), rows*stride)
		clear(h.Data)
		if d.hostMats == nil {
			d.hostMats = map[*float32]*hostMatrix{}
		}
		d.hostMats[&h.Data[0]] = h
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// Release unmaps and deletes the matrix; Data must not be used afterwards.
// Idempotent, and safe after the Device's Release.
func (h *hostMatrix) Release() {
	d := h.d
	if d == nil {
		return
	}
	h.d = nil
	d.releaseObject(func() {
		delete(d.hostMats, &h.Data[0])
		h.buf.Release()
	})
	h.Data = nil
}

// hostMatrix returns the pinned matrix whose memory g is, laid out with row
// stride ld, or nil; on the device thread.
func (d *Device) hostMatrix(g blas32.General, ld int) *hostMatrix {
	h := d.hostMats[&g.Data[0]]
	if h == nil || g.Stride != ld || g.Rows != h.Rows || g.Cols != h.Cols {
		return nil
	}
	return h
}

// copyIn queues the GPU copy of h's rows [r0, r0+rows) into dst, their
// padding zeroed first (the kernels read it); on the device thread.
func (h *hostMatrix) copyIn(dst staging.View, r0, rows int) {
	for i := r0; i < r0+rows; i++ {
		clear(h.Data[i*h.Stride+h.Cols : (i+1)*h.Stride])
	}
	h.buf.CopyTo(dst.Buf, 4*r0*h.Stride, 4*dst.Off, 4*rows*h.Stride)
}

// copyOut queues the GPU copy of src's rows into h's rows [r0, r0+rows)
// and returns a fence that passes when it is done; on the device thread.
// Where src is h's own buffer (a pass whose kernel wrote C straight into
// it: hostProduct.outC) nothing is copied: the fence follows the barrier
// that makes the kernel's writes visible to the host.
func (h *hostMatrix) copyOut(src staging.View, r0, rows int) glw.Fence {
	if src.Buf == h.buf {
		glw.BarrierClientMapped()
	} else {
		glw.BarrierBufferRead()
		src.Buf.CopyTo(h.buf, 4*src.Off, 4*r0*h.Stride, 4*rows*h.Stride)
	}
	f := glw.NewFence()
	glw.Flush()
	return f
}
