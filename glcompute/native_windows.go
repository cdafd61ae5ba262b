package glcompute

import "github.com/glmul/glmul/glcompute/internal/wgl"

// native is the window system's own OpenGL binding, whose current context
// NewDeviceFromCurrent borrows: WGL on Windows (GLFW, SDL and raylib make
// WGL contexts there; EGL is no part of Windows' OpenGL).
var native = nativeBinding{name: "WGL", current: wgl.CurrentContext, getProc: wgl.GetProcAddress}
