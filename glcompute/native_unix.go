//go:build linux || freebsd || netbsd || openbsd

package glcompute

import "github.com/glmul/glmul/glcompute/internal/glx"

// native is the window system's own OpenGL binding, whose current context
// NewDeviceFromCurrent borrows when no EGL context is current: GLX here
// (GLFW, SDL and raylib on X11).
var native = nativeBinding{name: "GLX", current: glx.CurrentContext, getProc: glx.GetProcAddress}
