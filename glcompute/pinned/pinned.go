// Package pinned makes float32 host matrices that the GPU reads and
// writes directly, as CUDA's pinned memory: a Matrix's Data is a
// persistent, coherent mapping of a GL buffer, which Device.Mul copies
// with the GPU, or reads and writes from its kernels, with no host copy
// into staging. For products of several GiB, where those copies cost
// (glmul -mapped); an ordinary Go slice works everywhere.
package pinned

import (
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/glmul/glmul/glcompute"
	"github.com/glmul/glmul/glcompute/internal/link"
)

// Matrix is a rows×cols float32 matrix in mapped host memory, rows
// padded to a multiple of 4 floats (the padding Mul's to write). Pass
// its General as A, B or C, unchanged in shape and stride, to the Mul of
// the Device given to New (another Device copies it as any slice). Data
// is valid until Release.
//
// Thread rule: Data may be read and written from any goroutine while no
// Mul that uses the matrix runs; New and Release follow the Device's rule.
type Matrix struct {
	blas32.General
	release func()
}

// New allocates a rows×cols Matrix on d, zero-filled. It returns an error
// matching glcompute.ErrUnsupported where the driver cannot map buffers
// persistently (glBufferStorage: OpenGL 4.4 or ARB_buffer_storage; not
// OpenGL ES; not with Options.NoPersistentMapping), glcompute.ErrTooLarge
// past any buffer and glcompute.ErrOutOfMemory where the driver refuses
// the memory. It panics on a dimension below 1.
func New(d *glcompute.Device, rows, cols int) (*Matrix, error) {
	g, release, err := link.NewPinned(d, rows, cols)
	if err != nil {
		return nil, err
	}
	return &Matrix{General: g, release: release}, nil
}

// Release unmaps and deletes the matrix; Data must not be used afterwards.
// Idempotent, and safe after the Device's Release.
func (m *Matrix) Release() {
	if m.release != nil {
		m.release()
		m.release = nil
	}
	m.Data = nil
}
