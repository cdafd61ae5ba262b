package glcompute

import (
	"time"
	"unsafe"
)

// Backend selects how Open creates its context; Info.Backend says which
// one a Device has. The zero value "" lets Open choose (Options.Backend).
type Backend string

// backendAuto is "" made explicit: the -backend flag's "auto".
const backendAuto Backend = "auto"

const (
	BackendGLFW Backend = "glfw" // hidden GLFW window
	BackendEGL  Backend = "egl"  // headless EGL
	BackendGLES Backend = "gles" // headless EGL, an OpenGL ES 3.1 context
	// BackendBorrowed marks a Device made by NewDeviceFromCurrent; Open
	// does not take it.
	BackendBorrowed Backend = "borrowed"
)

// Required OpenGL version, and OpenGL ES version (BackendGLES).
const (
	requiredMajor   = 4
	requiredMinor   = 3
	requiredMajorES = 3
	requiredMinorES = 1
)

// Options configure Open. A nil *Options means the zero value of every field.
// A negative Device, StagingBytes or MaxDispatchTime panics (a programmer
// error).
type Options struct {
	// Backend chooses the context. Zero value "" (or "auto"): a hidden
	// GLFW window where package glcompute/glfw is linked and a display
	// exists, else headless EGL.
	Backend Backend
	// Device selects an EGL device by its 1-based index in EGL's
	// enumeration (devgroup.Devices lists them). Zero value: automatic, a hardware GPU
	// before Mesa's software device. Ignored by the GLFW backend.
	Device int
	// Verbose adds the line-numbered shader source to compile errors. Zero
	// value: the file name and the driver's log only.
	Verbose bool
	// IgnoreTuned makes the default kernel the built-in one for the vendor,
	// ignoring glmul tune's cache. Zero value: a tuned configuration for
	// this exact driver is used when the cache has one.
	IgnoreTuned bool
	// Unseen runs the device as one glmul never saw, to judge the device
	// model: the model (tuning.Model) chooses the kernels from what OpenGL
	// reports (shared memory and invocations a work group may have), with
	// no tuning cache (as IgnoreTuned) and none of the vendor's measured
	// choices or rules (the CPU ones of llvmpipe included: there a product
	// runs the model's GPU configurations, the wave is 128 groups, not the
	// CPU's threads, and glblas.Float32 keeps every product on the CPU, as
	// for a vendor never measured); the shape rules still split K by the
	// multiprocessors where the driver reports them.
	// Zero value: a vendor glmul has measured gets its own choice.
	Unseen bool
	// ProgramCache is a directory where compiled kernels are kept as the
	// driver's program binaries (glGetProgramBinary) and loaded from in
	// later processes (glProgramBinary), one file per driver (vendor,
	// renderer, version) and kernel source: a load costs a fraction of a
	// compile and link (docs/PERFORMANCE.md, "Figures from the library's
	// comments", ProgramCache). A binary the driver refuses is compiled
	// again and replaced. Zero value "": no files, every kernel compiled.
	// glmul passes a directory in the user's cache directory.
	ProgramCache string
	// NoPersistentMapping makes host products stage their matrices
	// through glMapBufferRange per chunk, as on a driver without
	// glBufferStorage (GL 4.4). Zero value false: persistent, coherent
	// mappings where the driver offers them.
	NoPersistentMapping bool
	// StagingBytes is the size of each of the four staging buffers that
	// carry host matrices to and from the GPU in chunks of rows (a row
	// larger than one in pieces). Zero value: 32 MiB. A streamed panel
	// pass (a product in panels, or a device group's) keeps up to six
	// more until Release, each as large as its product needs: two of
	// this size for B's pieces and, where it is zero, four of 128 MiB
	// for A and C (else the four above).
	StagingBytes int
	// MaxDispatchTime is the longest one compute dispatch should run:
	// glmul times a kernel's first dispatches as they grow and sizes the
	// rest to half of it (program.go). Zero value: for an owned Device on
	// Windows, whose GPU watchdog (TDR) resets a GPU after 2 s of work
	// without a pause, defaultMaxDispatchTimeWindows (500 ms); elsewhere,
	// and for a borrowed Device (measuring takes glFinish calls), no
	// pacing: dispatches of at most MulOptions.MaxGroups² work groups.
	// The watchdog: docs/SUPPORT.md, "Windows".
	MaxDispatchTime time.Duration
	// GetProcAddress, for NewDeviceFromCurrent only, is the host's own GL
	// loader (SDL_GL_GetProcAddress, glfw.GetProcAddress, ...). go-gl keeps
	// its function pointers in process-wide variables, shared with a host
	// that uses go-gl/gl v4.3-core too: loading them through the host's
	// loader keeps them what the host loaded. Zero value nil: glmul loads
	// them through eglGetProcAddress or glXGetProcAddress, whichever API
	// has the current context.
	GetProcAddress func(name string) unsafe.Pointer
	// GLLoaded, for NewDeviceFromCurrent only, says the host has already
	// loaded go-gl/gl v4.3-core for this context (gl.Init or
	// gl.InitWithProcAddrFunc; without it, NewDeviceFromCurrent fails with
	// ErrNoContext), so glmul loads none of go-gl's pointers and
	// the host's stay as they are; glmul still looks up the one entry point
	// of its own that go-gl's 4.3 package lacks
	// (glGetNamedBufferParameteri64v, through GetProcAddress when given).
	// Zero value false: glmul loads them (see GetProcAddress). A host on another go-gl package (v4.6-core, ...)
	// has pointers of its own that glmul never touches.
	GLLoaded bool
}

// check panics on a negative field (nil is the zero Options).
func (o *Options) check() {
	switch {
	case o == nil:
	case o.Device < 0:
		panic("glcompute: Options.Device is negative")
	case o.StagingBytes < 0:
		panic("glcompute: Options.StagingBytes is negative")
	case o.MaxDispatchTime < 0:
		panic("glcompute: Options.MaxDispatchTime is negative")
	}
}
