// Package glcompute multiplies float32 matrices on the GPU with OpenGL 4.3
// (or OpenGL ES 3.1) compute shaders, through any vendor's driver (or Mesa
// on the CPU).
//
// # Contexts
//
// Open creates a GL context of its own, in one of three ways:
//
//   - BackendGLFW: a hidden GLFW window (needs a display: X11 or Wayland)
//     in programs that import package glcompute/glfw, which links GLFW;
//   - BackendEGL: headless EGL on a device (EGL_EXT_platform_device,
//     hardware GPUs before Mesa's software device), else Mesa's surfaceless
//     platform. Needs no display: servers, containers, CI.
//   - BackendGLES: the same through an OpenGL ES 3.1 context, the API of
//     phones, boards and ANGLE; the kernels compile as GLSL ES 3.10. ES has
//     no GL timer (times are the wall clock's) and, without
//     EXT_buffer_storage, no persistent mappings (no HostMatrix).
//
// BackendAuto (the default) uses GLFW when package glcompute/glfw is
// linked in, DISPLAY or WAYLAND_DISPLAY is set and a window opens, EGL
// otherwise. glcompute itself links no windowing library, so that a game
// engine with its own GLFW (raylib) can link it.
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
// β·C) and Device.GemmBatched (many products of sizes up to 32, each with
// its own row strides) queue work and return at once, with a memory
// barrier after; Device.Fence tells when the GPU is done; Device.Scope
// groups calls under one state save/restore and one full barrier. BLAS
// puts Sgemm on the GPU for gonum's blas32.
//
// # Host matrices and transfers
//
// Mul, Upload and Download move host matrices through staging buffers in
// host-visible memory (persistent mappings where the driver has
// glBufferStorage, else glMapBufferRange per chunk), copied by several
// goroutines; Upload hands matrices up to DirectUploadBytes to
// glBufferSubData instead; PrepareStaging makes them ahead of the first product. A
// HostMatrix lives in such memory from the start, so that the GPU reads
// and writes it with no host copy, as pinned memory does for CUDA. Where
// the kernel reads A transposed and the product has more than about three
// waves of work groups (bands of at least a wave), with no edge strips, and
// A, B and C are all HostMatrix memory or A and C are both Go slices (with
// persistently mapped staging buffers that a band fits), its bands of A
// are transposed straight out of host memory (the HostMatrix, or the
// staging buffers) and its bands of C copied into it by compute passes
// that run beside the kernel's (a streamed pass, Timings.Streamed;
// docs/PERFORMANCE.md). Products larger than one shader storage binding,
// or than MulOptions.MaxGPUMemory, run in
// panels (Plan tells how).
//
// # Matrices larger than memory
//
// MulStream multiplies a matrix read by panels of rows (a RowReader: a
// file, say) by one read whole, writing C's rows in order to a RowWriter,
// so that host memory holds B and three panels, not A and C
// (StreamHostBytes). Reading, the GPU, a caller's check of each panel
// (StreamOptions.Check) and writing overlap, each on a goroutine of its
// own. glmul mul is this call between files.
//
// # Measuring
//
// Mul's Timings describe its layout (kernel, dispatches, work groups, K
// split or stream-K, panels) and its pipelined pass (end to end, and each stage's busy
// time within it). Timing the stages alone, warming the GPU up and
// repeating runs is the caller's: MulOptions.Measure hands a hook the
// product's Stages (Upload, Run with the GL timer, ReadBack) on the
// product's own plan and buffers, before the pass. glmul's measurements
// are made so, in cmd/glmul/internal/measure.
//
// # What a host may rely on
//
// On a borrowed context (NewDeviceFromCurrent):
//
//   - glmul writes only the elements of the result: a C's stride gaps,
//     the floats around it, and A and B (even when A is B, or all three
//     share one buffer) come back bit for bit. Upload writes only the
//     view's elements. The tests check every float of every buffer.
//   - α = 0 reads neither A nor B and β = 0 does not read C, so NaN or
//     garbage there does not reach the result.
//   - Only the range of a buffer that a call reads or writes is bound,
//     starting on GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT: a matrix may
//     sit anywhere in a buffer of any size; what must fit one shader
//     storage block is the matrix (or a batch) itself.
//   - Each call, or each Scope, saves and restores the state glmul
//     touches: the current program, the generic shader storage binding,
//     indexed bindings 0–2 (buffer, offset and size) and, for calls that
//     copy through them or make buffers (uploads, downloads, host
//     products, a resident product's first use of a larger scratch or
//     workspace), the
//     copy-read and copy-write bindings; a kernel that reads through buffer
//     textures (the cpu family, llvmpipe's default; the fast _tex
//     configurations, NVIDIA's defaults) also the active texture unit and
//     the buffer textures of units 0 and 1. Other state (VAOs, array
//     buffers, other textures, framebuffers) is never touched. glmul's
//     own objects stay in the context between calls: its GPU buffers
//     kept for the next host product and, for those, buffer textures of
//     their own (created and deleted by glmul, never bound after a call);
//     for resident products, the scratch of A's transpose and the
//     workspace of K splits and stream-K (up to MaxResidentWorkBytes),
//     each grown to the largest asked for and kept until Release.
//   - glmul never calls glGetError, installs no debug callback and never
//     starts or ends a query the host has running. Out of memory is
//     detected from the new buffer's size, where the driver refuses at all.
//   - Resident calls (Gemm, GemmBatched, Fence, Upload) only queue work:
//     no glFinish, no readback, no glClientWaitSync. Each product ends
//     with a glFlush (a submission, not a wait; see "NVIDIA and
//     glBufferSubData" below). Upload hands matrices up to
//     DirectUploadBytes to glBufferSubData and larger ones to two staging
//     buffers that take turns, waiting only when both still hold copies
//     the GPU has not made. Download waits for the results it reads;
//     Mul and BLAS.Sgemm, which take host matrices, wait for their
//     product. The barrier after a call
//     covers every later use (draws, compute, buffer reads); inside a
//     Scope, glmul's own later calls, the Scope's end adding the rest.
//   - WrapBuffer binds nothing: it reads the buffer's size with
//     glGetNamedBufferParameteri64v where the context has direct state
//     access (OpenGL 4.5 or GL_ARB_direct_state_access: NVIDIA, AMD,
//     Intel and Mesa drivers of this decade); on an older context it binds
//     the buffer to the generic shader storage target for the query and
//     flushes.
//   - go-gl's function pointers are process-wide: glmul loads them
//     through Options.GetProcAddress (the host's loader) when given,
//     loads none with Options.GLLoaded (NewDeviceFromCurrent fails with
//     ErrNoContext if the host has not loaded them), else through eglGetProcAddress
//     or glXGetProcAddress. It looks up one entry point of its own,
//     glGetNamedBufferParameteri64v, which go-gl's 4.3 package lacks.
//   - A call on a thread where the borrowed context is not current panics
//     (it would otherwise do nothing, or act on another context).
//
// # NVIDIA and glBufferSubData
//
// NVIDIA's driver (seen with 580.159.04 on an H100, headless EGL) can lose
// a glBufferSubData to the next compute dispatch: if a buffer is bound as
// shader storage (glBindBuffer, glBindBufferBase or glBindBufferRange, or
// used by a dispatch) while an earlier glBufferData or glBufferSubData of
// it has not been flushed, the next glBufferSubData is not seen by the
// next dispatch, which reads the buffer as it was before. Nothing of
// glmul's is needed to see it: glBufferData, glBindBuffer(
// GL_SHADER_STORAGE_BUFFER), glBindBuffer(…, 0), glBufferSubData, then a
// dispatch that reads the buffer does it. A glFlush between the bind and
// the write prevents it where the bind was to the generic target, or was
// followed by a dispatch (not after a bare indexed bind); a glFinish
// between the first write and the bind always does. glmul therefore never
// binds a host's buffer outside a product (WrapBuffer reads its size
// without binding it), flushes after every product, and writes with
// glBufferSubData through the copy-write target, which does not trigger
// it. A host that binds its own buffers as shader storage between
// creating and writing them should flush after its dispatches
// (docs/PERFORMANCE.md, "An NVIDIA driver bug behind issue 22", has the
// sequences measured; TestHostWriteAfterWrap and TestHostWriteAfterProduct
// fail on that driver without glmul's measures).
//
// # Mesa's llvmpipe and long K
//
// Mesa's llvmpipe (22.3.6 measured; zink on lavapipe compiles with the
// same gallivm) stops every loop of a shader invocation once its loops
// together have run 65535 iterations, with no error: an unsplit product
// with K over 262140 (the cpu kernel's 4 of K an iteration) came out
// wrong. On a renderer naming llvmpipe no invocation loops over more than
// half that budget: Mul, MulStream, Matrix.Mul and MulKernel split K (at
// least ⌈K/131068⌉ slices for the cpu kernel, whatever SplitK says, in
// panels too), Gemm's general kernel runs K in chunks of 16368 that add up
// in C, and tiled32 past K = 1048544 returns ErrUnsupported (loops.go;
// docs/PERFORMANCE.md, "Long K on llvmpipe").
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
// Data[i*Stride+j]. C = A·B with A m×k and B k×n. A product whose
// matrices do not fit one shader storage block (Info.MaxSSBOBlockSize)
// runs in panels with the fast kernel (tiled32 returns ErrTooLarge).
//
// # Errors
//
// Environment failures return errors matching ErrNoContext, ErrUnsupported,
// ErrTooLarge, ErrOutOfMemory or ErrDriver with errors.Is. Programmer errors
// (mismatched shapes, short slices, a released Device) panic.
package glcompute
