package glcompute

import (
	"unsafe"

	"github.com/glmul/glmul/glcompute/internal/glfwctx"
)

// newTestHost makes a host's own context, as an engine would, current on
// the calling (locked) thread: a hidden GLFW window's WGL context (Windows
// has no EGL).
func newTestHost() (getProc func(string) unsafe.Pointer, release func(), err error) {
	c, err := glfwctx.NewContext(4, 3)
	if err != nil {
		return nil, nil, err
	}
	return glfwctx.GetProcAddress, c.Release, nil
}

// platformBackend is the backend a test asking for b runs on Windows:
// headless EGL does not exist there, so EGL tests run on GLFW's WGL
// context; OpenGL ES (through EGL) cannot run at all, which is why the
// second result is set.
func platformBackend(b Backend) (Backend, string) {
	switch b {
	case BackendEGL:
		return BackendGLFW, ""
	case BackendGLES:
		return b, "OpenGL ES contexts come from EGL, which Windows' OpenGL lacks"
	}
	return b, ""
}
