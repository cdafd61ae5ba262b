package glcompute

import (
	"errors"
	"strings"
	"testing"

	"github.com/glmul/glmul/glcompute/internal/glw"
)

// TestESBufferStorage: OpenGL ES makes no persistent mappings, so
// newHostMatrix refuses with ErrUnsupported and staging maps per chunk.
// The GL_EXT_buffer_storage path (useStorageEXT) is built but off: on
// zink over lavapipe the pipelined pass left a persistently mapped C
// unwritten for the host on ES (hostMatrices failed 3 of 3), zink's late
// writes to mapped memory (lateMappedWrites). Turning it on runs
// hostMatrices here again.
func TestESBufferStorage(t *testing.T) {
	d := openDevice(t, BackendGLES)
	var ext bool
	d.call(func() { ext = glw.HasExtension("GL_EXT_buffer_storage") })
	if !useStorageEXT || !ext {
		if _, err := d.newHostMatrix(2, 2); !errors.Is(err, ErrUnsupported) {
			t.Errorf("newHostMatrix on OpenGL ES: %v, want ErrUnsupported", err)
		}
		if got := d.tuning().Staging(); strings.Contains(got, "persistent") {
			t.Errorf("Staging() = %q on OpenGL ES, want no persistent mapping", got)
		}
		return
	}
	if got := d.tuning().Staging(); !strings.Contains(got, "persistent") {
		t.Errorf("Staging() = %q on OpenGL ES with GL_EXT_buffer_storage, want persistent mapping", got)
	}
	hostMatrices(t, d, 67, 45, 90)
}
