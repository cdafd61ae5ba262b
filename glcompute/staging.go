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
		d.stager = staging.New(bytes, d.bufferStorage(), !d.opts.NoPersistentMapping)
	}
	return d.stager
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
