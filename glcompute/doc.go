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
// A host that owns its context (a game engine) lends it instead:
// NewDeviceFromCurrent uses the context current on the calling thread,
// starts no goroutine, and saves and restores the GL state each call
// touches. NewHeadlessContext gives such a host an EGL context without a
// window.
//
// # Resident work
//
// Matrix keeps a matrix in a GPU buffer (NewMatrix) or views one of the
// host's buffers in place (WrapBuffer). Matrix.Gemm (C = α·op(A)·op(B) +
// β·C) and Device.MulBatched (many products of sizes up to 32) queue work
// and return at once, with a memory barrier after; Device.Fence tells when
// the GPU is done. BLAS puts Sgemm on the GPU for gonum's blas32.
//
// # Threading
//
// An owned Device (Open) keeps its context on one goroutine locked to an OS
// thread; every exported method sends its GL work there, so all methods are
// safe for concurrent use from any goroutine, and calls on one Device run
// one at a time. A borrowed Device (NewDeviceFromCurrent) and its matrices
// must be used on the host's GL thread with the host's context current.
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
