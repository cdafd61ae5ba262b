package glcompute

import (
	"errors"
	"strings"
	"testing"

	"github.com/glmul/glmul/glcompute/internal/glw"
)

// TestESBufferStorage: on OpenGL ES with GL_EXT_buffer_storage (Mesa's
// ES 3.2) the staging buffers are mapped persistently and host matrices
// work, through glBufferStorageEXT: glmul looked only for
// GL_ARB_buffer_storage, so -backend gles -mapped was refused (a new
// user's audit). Without the extension NewHostMatrix fails naming it.
func TestESBufferStorage(t *testing.T) {
	d := openDevice(t, BackendGLES)
	var ext bool
	d.call(func() { ext = glw.HasExtension("GL_EXT_buffer_storage") })
	if !ext {
		if _, err := d.NewHostMatrix(2, 2); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "GL_EXT_buffer_storage") {
			t.Errorf("NewHostMatrix on OpenGL ES without GL_EXT_buffer_storage: %v", err)
		}
		t.Skipf("%s lists no GL_EXT_buffer_storage", d.Info().Renderer)
	}
	if got := d.Staging(); !strings.Contains(got, "persistent") {
		t.Errorf("Staging() = %q on OpenGL ES with GL_EXT_buffer_storage, want persistent mapping", got)
	}
	hostMatrices(t, d, 67, 45, 90)
}
