// Package glfw adds the GLFW back end to glcompute: a hidden GLFW window's
// OpenGL context (GLX on X11), which glcompute.Open uses for BackendGLFW
// and, where a display exists, for the default Backend. Import it for its side
// effect in programs that open their own Device:
//
//	import _ "github.com/glmul/glmul/glcompute/glfw"
//
// Without it glcompute links no windowing library: the default Backend uses
// headless EGL, BackendGLFW returns an error that names this package, and
// a program that only borrows a host's context (NewDeviceFromCurrent)
// links nothing that clashes with the host's own GLFW (raylib compiles
// its own copy of GLFW's C sources; two copies do not link).
package glfw

import (
	"github.com/glmul/glmul/glcompute/internal/glfwctx"
	"github.com/glmul/glmul/glcompute/internal/window"
)

func init() {
	window.GLFW = &window.Maker{
		New: func(major, minor int) (window.Context, error) {
			c, err := glfwctx.NewContext(major, minor)
			if err != nil {
				return nil, err
			}
			return c, nil
		},
		GetProcAddress: glfwctx.GetProcAddress,
	}
}
