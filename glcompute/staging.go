package glcompute

import (
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/staging"
)

// stage returns the Device's staging buffers (a staging.Stager),
// creating them on first use; on the device thread.
func (d *Device) stage() *staging.Stager {
	if d.stager == nil {
		bytes := d.opts.StagingBytes
		if bytes <= 0 {
			bytes = staging.DefaultBytes
		}
		d.stager = staging.New(bytes, d.storage, !d.opts.NoPersistentMapping)
	}
	return d.stager
}

// unitStagingBytes is the size of the staging buffers of a streamed
// panel pass (unitstream.go) where Options.StagingBytes is zero: its bands
// are as many rows as one holds of A, and 128 MiB gives bands of a wave
// of work groups at 16384³ and 32768³ on a GPU of 132 multiprocessors,
// 32 MiB a quarter wave (docs/PERFORMANCE.md, "Streamed units").
const unitStagingBytes = 128 << 20

// unitStages returns the staging buffers of a streamed panel pass, for A
// and C, and for B's pieces, made on first use: the Device's own where
// Options.StagingBytes sets their size, else buffers of unitStagingBytes
// kept beside them. On the device thread.
func (d *Device) unitStages() (ac, pieces *staging.Stager) {
	st := d.stage()
	if d.opts.StagingBytes > 0 {
		ac = st
	} else {
		if d.units == nil {
			d.units = staging.New(unitStagingBytes, d.storage, true)
		}
		ac = d.units
	}
	if d.pieces == nil {
		d.pieces = staging.New(ac.Bytes, d.storage, true)
	}
	return ac, d.pieces
}

// persistent reports whether host products may map staging buffers
// persistently (a streamed pass reads and writes them from the GPU).
func (d *Device) persistent() bool {
	return d.storage != glw.StorageNone && !d.opts.NoPersistentMapping
}

// bufferStorage is how the current context offers glBufferStorage:
// desktop OpenGL 4.4 or GL_ARB_buffer_storage through go-gl. OpenGL ES's
// GL_EXT_buffer_storage (glBufferStorageEXT, which openGLES looks up) is
// not used: on Mesa 22.3.6's zink over lavapipe, a product's pass that
// wrote a persistently mapped C on an ES context left it unwritten for
// the host (TestESBufferStorage; docs/DRIVERS.md): zink's late writes
// to mapped memory (lateMappedWrites), now avoided there.
func (d *Device) bufferStorage() glw.Storage {
	switch {
	case d.info.ES && useStorageEXT && glw.HaveStorageEXT() && glw.HasExtension("GL_EXT_buffer_storage"):
		return glw.StorageEXT
	case d.info.ES:
		return glw.StorageNone
	case d.info.Major > 4 || d.info.Major == 4 && d.info.Minor >= 4 || glw.HasExtension("GL_ARB_buffer_storage"):
		return glw.StorageCore
	}
	return glw.StorageNone
}

// useStorageEXT turns OpenGL ES's EXT_buffer_storage on (see
// bufferStorage): off until the GL suite has run with it on, NVIDIA's ES
// context included (docs/DRIVERS.md).
const useStorageEXT = false
