package gltest

import (
	"github.com/glmul/glmul/glcompute"
	_ "github.com/glmul/glmul/glcompute/glfw" // Windows' contexts: WGL through GLFW
)

// backend is the context tests open: Windows has no EGL.
const backend = glcompute.BackendGLFW
