// Package glcompute multiplies float32 matrices on the GPU with OpenGL 4.3
// (or OpenGL ES 3.1) compute shaders, through any vendor's driver (or Mesa
// on the CPU). docs/LIBRARY.md is the guide; this is the contract.
//
// # Contexts
//
// Open creates a context of its own: BackendEGL (headless, no display
// needed), BackendGLES (the same as OpenGL ES 3.1), or BackendGLFW (a
// hidden window, in programs that import package glcompute/glfw, which
// links GLFW). The default (Backend "") uses GLFW where it is linked and
// a display opens, EGL otherwise. A host that owns its context (a game
// engine) lends it instead: NewDeviceFromCurrent uses the context current
// on the calling thread, starts no goroutine, and saves and restores the
// GL state each call touches. NewHeadlessContext gives such a host an EGL
// context without a window.
//
// # Products
//
// Device.Mul multiplies host matrices: upload, kernel and readback
// overlap, and products larger than one storage binding or
// MulOptions.MaxGPUMemory run in panels (K too, where it must, the
// panels' products summed on the GPU). Package stream multiplies
// matrices read and written by panels of rows, package devgroup one
// product over several GPUs, package pinned makes host matrices the GPU
// copies itself. Matrix keeps a matrix on the GPU (NewMatrix) or views a
// host's buffer (WrapBuffer); Matrix.Gemm (C = α·op(A)·op(B) + β·C) and
// Device.GemmBatched queue work and return at once; Device.Fence tells
// when the GPU is done; Device.Scope groups calls under one state save
// and restore. Package glblas puts gonum's Sgemm and Dgemm on the GPU.
// Mul's Timings describe the layout that ran and its pipelined pass; MulOptions.Measure lets a caller time the
// stages alone. Device.Mul64 multiplies float64 matrices (blas64.General)
// the same way, where the shaders have double (desktop OpenGL, not OpenGL
// ES); NewMatrix64 keeps one on the GPU (Upload64, Gemm64, Download64).
//
// # What a host may rely on
//
// On a borrowed context (the whole list: docs/LIBRARY.md):
//
//   - Only the elements of the result are written: stride gaps, the
//     floats around a view, and A and B come back bit for bit. α = 0
//     reads neither A nor B; β = 0 does not read C.
//   - Each call or Scope restores what it touches: the program, the
//     generic and indexed (0–2) shader storage bindings, the copy
//     bindings where it copies, and for buffer-texture kernels the active
//     texture unit and units 0 and 1. Nothing else is touched.
//   - No glGetError, no debug callback, no query started or ended.
//   - Resident calls only queue work and end with a barrier and a glFlush;
//     Download, Mul and glblas.Float32.Sgemm wait for their own results.
//   - A call on a thread where the context is not current panics.
//
// Drivers' defects glmul works around (an NVIDIA glBufferSubData lost
// to the next dispatch; Mesa llvmpipe's loop limit at long K) are in
// docs/DRIVERS.md.
//
// # Threading
//
// An owned Device (Open) keeps its context on one goroutine locked to an
// OS thread; every method sends its GL work there, so all methods are safe
// for concurrent use, and calls on one Device run one at a time. A
// borrowed Device and its matrices must be used on the host's GL thread
// with the host's context current.
//
// # Layout
//
// Matrices are gonum's blas32.General (Mul64's blas64.General): row-major,
// element (i, j) at Data[i*Stride+j]. C = A·B with A m×k and B k×n.
//
// # Errors
//
// Environment failures return errors matching ErrNoContext,
// ErrUnsupported, ErrTooLarge, ErrOutOfMemory, ErrDriver or ErrReleased
// with errors.Is. Programmer errors (mismatched shapes, short slices, a
// released Device) panic.
package glcompute
