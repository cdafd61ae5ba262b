// Package glcompute multiplies float32 matrices on the GPU with OpenGL 4.3
// compute shaders, through any vendor's driver (or Mesa on the CPU).
//
// # Contexts
//
// Open creates a GL context of its own, in one of two ways:
//
//   - BackendGLFW: a hidden GLFW window (needs a display: X11 or Wayland);
//   - BackendEGL: headless EGL on a device (EGL_EXT_platform_device,
//     hardware GPUs before Mesa's software device), else Mesa's surfaceless
//     platform. Needs no display: servers, containers, CI.
//
// BackendAuto (the default) uses GLFW when DISPLAY or WAYLAND_DISPLAY is set
// and a window opens, EGL otherwise.
//
// # Threading
//
// A Device owns its context through one goroutine locked to an OS thread;
// every exported method sends its GL work there, so all methods are safe for
// concurrent use from any goroutine. Calls on one Device run one at a time.
//
// # Layout
//
// Matrices are gonum's blas32.General: row-major float32, element (i, j) at
// Data[i*Stride+j]. C = A·B with A m×k and B k×n; each matrix must fit one
// shader storage block (Info.MaxSSBOBlockSize) or Mul returns ErrTooLarge.
//
// # Errors
//
// Environment failures return errors matching ErrNoContext, ErrUnsupported,
// ErrTooLarge, ErrOutOfMemory or ErrDriver with errors.Is. Programmer errors
// (mismatched shapes, short slices, a released Device) panic.
package glcompute
