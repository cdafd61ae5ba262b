package glcompute

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/glmul/glmul/glcompute/internal/egl"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/thread"
	"github.com/glmul/glmul/glcompute/internal/window"
)

// Backend selects how Open creates its context.
type Backend string

const (
	BackendAuto Backend = "auto" // GLFW where a display exists, else EGL
	BackendGLFW Backend = "glfw" // hidden GLFW window
	BackendEGL  Backend = "egl"  // headless EGL
	BackendGLES Backend = "gles" // headless EGL, an OpenGL ES 3.1 context
	// BackendBorrowed marks a Device made by NewDeviceFromCurrent; Open
	// does not take it.
	BackendBorrowed Backend = "borrowed"
)

// ParseBackend returns the backend named s.
func ParseBackend(s string) (Backend, error) {
	switch b := Backend(s); b {
	case BackendAuto, BackendGLFW, BackendEGL, BackendGLES:
		return b, nil
	}
	return "", fmt.Errorf("unknown backend %q: use auto, glfw, egl or gles", s)
}

// Required OpenGL version, and OpenGL ES version (BackendGLES).
const (
	RequiredMajor   = 4
	RequiredMinor   = 3
	RequiredMajorES = 3
	RequiredMinorES = 1
)

// Options configure Open. A nil *Options means the zero value of every field.
// A negative Device, StagingBytes or MaxDispatchTime panics (a programmer
// error).
type Options struct {
	// Backend chooses the context. Zero value "": BackendAuto.
	Backend Backend
	// Device selects an EGL device by its 1-based index in EGL's
	// enumeration (see EGLDevices). Zero value: automatic, a hardware GPU
	// before Mesa's software device. Ignored by the GLFW backend.
	Device int
	// Verbose adds the line-numbered shader source to compile errors. Zero
	// value: the file name and the driver's log only.
	Verbose bool
	// IgnoreTuned makes the default kernel the built-in one for the vendor,
	// ignoring glmul tune's cache. Zero value: a tuned configuration for
	// this exact driver is used when the cache has one.
	IgnoreTuned bool
	// NoPersistentMapping makes host products stage their matrices
	// through glMapBufferRange per chunk, as on a driver without
	// glBufferStorage (GL 4.4). Zero value false: persistent, coherent
	// mappings where the driver offers them.
	NoPersistentMapping bool
	// StagingBytes is the size of each of the four staging buffers that
	// carry host matrices to and from the GPU in chunks of rows; a row
	// must fit one. Zero value: DefaultStagingBytes (32 MiB).
	StagingBytes int
	// MaxDispatchTime is the longest one compute dispatch should run:
	// glmul times a kernel's first dispatches as they grow and sizes the
	// rest to half of it (pacing.go). Zero value: for an owned Device on
	// Windows, whose GPU watchdog (TDR) resets a GPU after 2 s of work
	// without a pause, DefaultMaxDispatchTimeWindows (500 ms); elsewhere,
	// and for a borrowed Device (measuring takes glFinish calls), no
	// pacing: dispatches of at most MulOptions.MaxGroups² work groups.
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
	// gl.InitWithProcAddrFunc), so glmul loads none of go-gl's pointers and
	// the host's stay as they are; glmul still looks up the one entry point
	// of its own that go-gl's 4.3 package lacks
	// (glGetNamedBufferParameteri64v, through GetProcAddress when given).
	// Zero value false: glmul loads them (see GetProcAddress). A host on another go-gl package (v4.6-core, ...)
	// has pointers of its own that glmul never touches.
	GLLoaded bool
}

// Info describes the device behind a context.
type Info struct {
	Backend     Backend `json:"backend"`
	BackendNote string  `json:"backend_note,omitempty"` // e.g. the EGL device, or why auto fell back to EGL
	Vendor      string  `json:"vendor"`
	Renderer    string  `json:"renderer"`
	Version     string  `json:"version"`
	GLSLVersion string  `json:"glsl_version"`
	Major       int     `json:"major"`
	Minor       int     `json:"minor"`
	// ES: an OpenGL ES context (BackendGLES); Major.Minor is its ES
	// version, and kernels are compiled as GLSL ES 3.10.
	ES bool `json:"es,omitempty"`

	MaxWorkGroupCount       [3]int `json:"max_work_group_count"`
	MaxWorkGroupSize        [3]int `json:"max_work_group_size"`
	MaxWorkGroupInvocations int    `json:"max_work_group_invocations"`
	MaxSharedMemory         int    `json:"max_shared_memory_bytes"`
	MaxSSBOBlockSize        int64  `json:"max_ssbo_block_bytes"`
	// TimerBits is GL_QUERY_COUNTER_BITS of GL_TIME_ELAPSED; 0 means no
	// timer queries.
	TimerBits int `json:"timer_bits"`
	// SMCount is the GPU's count of multiprocessors (gl_SMCountNV, where
	// the driver has GL_NV_shader_thread_group); 0 where unknown. Products
	// whose grid fills a last wave of work groups poorly are split along K
	// with it (tuning.AutoSplitK).
	SMCount int `json:"sm_count,omitempty"`

	// DefaultKernel is the kernel Mul runs when not told which, and
	// DefaultKernelSource where that choice came from (the tuning cache, a
	// built-in per-vendor default, ...).
	DefaultKernel       string `json:"default_kernel"`
	DefaultKernelSource string `json:"default_kernel_source"`
	// SmallGridKernel, if set, replaces DefaultKernel for products that
	// tuning.UseSmallGrid says it fits badly (too few work groups to fill
	// the GPU even split along K, or a short K).
	SmallGridKernel string `json:"small_grid_kernel,omitempty"`
	// NaturalKernel, set where DefaultKernel reads A transposed
	// (shaders.Kernel.TransposeA), replaces it where A is read as it is:
	// products in panels or without room for the transpose (for a resident
	// product: where the transpose kernel does not fit or its scratch
	// buffer cannot be had), and products narrower than
	// tuning.TransposedAMinN columns (tuning.UseTransposedA).
	NaturalKernel string `json:"natural_kernel,omitempty"`
	// ClassKernels are the configurations glmul tune chose for the shape
	// classes other than square (tuning.LongK, tuning.ThinK), by class
	// name; a product of such a class runs its class's kernel.
	ClassKernels map[string]string `json:"class_kernels,omitempty"`
}

// glContext is what the two backends provide.
type glContext interface {
	MakeCurrent() error
	ReleaseCurrent()
	Release()
}

// Device is an OpenGL context ready for matrix products.
type Device struct {
	opts   Options
	thread *thread.OSThread
	info   Info

	mu       sync.Mutex
	released bool
	borrowed bool // the host's context: no thread, state saved and restored
	ctx      glContext
	programs map[string]*program
	stager   *stager                  // created on the first host product
	hostMats map[*float32]*HostMatrix // by the address of Data[0]
	// bindAlign is the byte alignment of bound buffer ranges:
	// GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT (and that of buffer
	// textures) rounded up to a multiple of 16, so that offsets in vec4s
	// stay whole.
	bindAlign int
	// named: the context has direct state access (OpenGL 4.5 or
	// GL_ARB_direct_state_access), so WrapBuffer reads a host buffer's
	// size without binding it (glw.Buffer.NamedSize says why that matters).
	named bool
	// scoped: inside Scope, calls neither save nor restore the host's
	// state and put only storage barriers after their dispatches.
	scoped bool
	// hostContext returns the context current on the calling thread in
	// the API of the borrowed one (EGL or GLX), and hostCurrent is the
	// borrowed context: every call checks that they agree.
	hostContext func() uintptr
	hostCurrent uintptr
	// born and lastWork (nanoseconds after born, atomic) say when the
	// device last had work: its creation, then each Mul's end
	// (Stages.Idle).
	born     time.Time
	lastWork atomic.Int64
	pool     []pooled // device buffers kept for the next host product
	// scratchT holds A transposed for resident products whose kernel reads
	// it so (mulTransposed): scratchBytes of it, grown to the largest A
	// seen, never shrunk, and kept until Release.
	scratchT     glw.Buffer
	scratchBytes int64
	// texs are the buffer textures of A and B for kernels that read
	// through textures (created on first use), texBound says they view a
	// buffer now, and texBlock is the most bytes one views (0: the driver
	// has no buffer textures).
	texs     [2]glw.Texture
	texBound bool
	texBlock int64
	// saved is the borrowed context's state that the running call (or
	// Scope) restores, which binding textures adds to; nil otherwise.
	saved *glw.State
	// bound is what the last resident call left bound, while no other
	// call can have changed it (see boundState).
	bound boundState
}

// boundState is the program and storage ranges a resident product left
// bound inside a Scope, where nothing else changes them (the host
// promises not to, and every other glmul call forgets them): the next
// resident product skips binding what is already bound, which on the H100
// is most of a scoped call's GL time (glUseProgram alone about 0.7 µs).
type boundState struct {
	valid  bool
	prog   glw.Program
	ranges [3]boundRange
}

// boundRange is a storage binding's buffer and byte range.
type boundRange struct {
	buf         glw.Buffer
	start, size int64
}

// idle is how long ago the device last had work.
func (d *Device) idle() time.Duration {
	return time.Since(d.born) - time.Duration(d.lastWork.Load())
}

// worked records that the device had work now.
func (d *Device) worked() { d.lastWork.Store(int64(time.Since(d.born))) }

// Open creates a context as opts say, checks that it offers OpenGL 4.3
// compute shaders, and returns the Device. The caller must Release it.
func Open(opts *Options) (*Device, error) {
	opts.check()
	d := &Device{thread: thread.New(), programs: map[string]*program{}, born: time.Now()}
	if opts != nil {
		d.opts = *opts
	}
	if d.opts.Backend == "" {
		d.opts.Backend = BackendAuto
	}
	if _, err := ParseBackend(string(d.opts.Backend)); err != nil {
		d.thread.Stop()
		return nil, fmt.Errorf("glcompute: %w", err)
	}
	var err error
	d.thread.Call(func() { err = d.open() })
	if err != nil {
		d.thread.Call(d.releaseContext)
		d.thread.Stop()
		return nil, err
	}
	return d, nil
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

// open runs on the device thread.
func (d *Device) open() error {
	backend := d.opts.Backend
	var autoNote string
	if backend == BackendAuto && !egl.Available() {
		backend = BackendGLFW // Windows: WGL or nothing, and its own error
	}
	if backend == BackendAuto {
		backend = BackendEGL
		if window.GLFW != nil && window.HaveDisplay() {
			if err := d.openGLFW(RequiredMajor, RequiredMinor); err == nil {
				d.info.Backend = BackendGLFW
				return d.initGL()
			} else if errors.Is(err, ErrUnsupported) {
				return err
			} else {
				autoNote = fmt.Sprintf("auto: %v; used EGL", strings.TrimPrefix(err.Error(), ErrNoContext.Error()+": "))
			}
		}
	}
	var err error
	switch backend {
	case BackendGLFW:
		err = d.openGLFW(RequiredMajor, RequiredMinor)
	case BackendEGL:
		err = d.openEGL(RequiredMajor, RequiredMinor)
	case BackendGLES:
		err = d.openGLES()
	}
	if err != nil {
		return err
	}
	d.info.Backend = backend
	if autoNote != "" {
		d.info.BackendNote = strings.TrimSpace(d.info.BackendNote + "; " + autoNote)
	}
	return d.initGL()
}

func (d *Device) openGLFW(major, minor int) error {
	w := window.GLFW
	if w == nil {
		return fmt.Errorf("%w: the GLFW back end is not linked into this program: import _ \"github.com/glmul/glmul/glcompute/glfw\"", ErrNoContext)
	}
	c, err := w.New(major, minor)
	if err != nil {
		if errors.Is(err, window.ErrNoDisplay) {
			return fmt.Errorf("%w: %w", ErrNoContext, err)
		}
		// The display works but refused a 4.3 core context: find out what
		// it offers, for an error that says so.
		if major > 0 {
			if probe, perr := w.New(0, 0); perr == nil {
				found := describeCurrent(w.GetProcAddress)
				probe.Release()
				return fmt.Errorf("%w: OpenGL %d.%d core with compute shaders is needed; the GLFW (GLX) driver offers %s", ErrUnsupported, major, minor, found)
			}
		}
		return fmt.Errorf("%w: %w", ErrNoContext, err)
	}
	d.ctx = c
	return d.loadGL(w.GetProcAddress)
}

func (d *Device) openEGL(major, minor int) error {
	c, err := egl.NewContext(d.opts.Device, major, minor)
	if err != nil {
		if probe, perr := egl.NewContext(d.opts.Device, 0, 0); perr == nil {
			found := "an unknown version"
			if probe.MakeCurrent() == nil {
				found = describeCurrent(egl.GetProcAddress)
				probe.ReleaseCurrent()
			}
			probe.Release()
			return fmt.Errorf("%w: OpenGL %d.%d core with compute shaders is needed; the EGL driver offers %s", ErrUnsupported, major, minor, found)
		}
		return fmt.Errorf("%w: %w", ErrNoContext, err)
	}
	d.ctx = c
	if err := c.MakeCurrent(); err != nil {
		return fmt.Errorf("%w: %w", ErrNoContext, err)
	}
	switch c.Platform {
	case "device":
		d.info.BackendNote = "EGL device " + c.Device.String()
	default:
		d.info.BackendNote = "EGL " + c.Platform + " platform"
	}
	return d.loadGL(egl.GetProcAddress)
}

// openGLES makes an OpenGL ES 3.1 context through headless EGL: the
// API of phones, boards and ANGLE, whose core has compute shaders.
func (d *Device) openGLES() error {
	c, err := egl.NewContextES(d.opts.Device, RequiredMajorES, RequiredMinorES)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoContext, err)
	}
	d.ctx = c
	if err := c.MakeCurrent(); err != nil {
		return fmt.Errorf("%w: %w", ErrNoContext, err)
	}
	d.info.ES = true
	d.info.BackendNote = "OpenGL ES through EGL " + c.Platform
	if c.Platform == "device" {
		d.info.BackendNote = "OpenGL ES through EGL device " + c.Device.String()
	}
	return d.loadGL(egl.GetProcAddress)
}

func (d *Device) loadGL(getProc func(string) unsafe.Pointer) error {
	if err := glw.Init(getProc); err != nil {
		return fmt.Errorf("%w: loading OpenGL functions: %w", ErrUnsupported, err)
	}
	return nil
}

// describeCurrent names the version and renderer of a probe context made
// current on this thread.
func describeCurrent(getProc func(string) unsafe.Pointer) string {
	if glw.Init(getProc) != nil {
		return "an unknown version"
	}
	return fmt.Sprintf("OpenGL %q on %q (%s)", glw.Version(), glw.Renderer(), glw.Vendor())
}

// initGL reads the device strings and limits and checks the version.
func (d *Device) initGL() error {
	glw.ClearErrors()
	if err := d.initInfo(); err != nil {
		return err
	}
	if err := glw.CheckError("reading device limits"); err != nil {
		return fmt.Errorf("%w: %w", ErrDriver, err)
	}
	return nil
}

// initInfo fills Info from the current context and checks the version.
func (d *Device) initInfo() error {
	i := &d.info
	i.Vendor, i.Renderer, i.Version, i.GLSLVersion = glw.Vendor(), glw.Renderer(), glw.Version(), glw.GLSLVersion()
	var ok bool
	i.Major, i.Minor, ok = glw.ParseVersion(i.Version)
	if !ok {
		return fmt.Errorf("%w: cannot read the OpenGL version from %q", ErrUnsupported, i.Version)
	}
	major, minor := RequiredMajor, RequiredMinor
	if i.ES {
		major, minor = RequiredMajorES, RequiredMinorES
	}
	if i.Major < major || i.Major == major && i.Minor < minor {
		return fmt.Errorf("%w: OpenGL %d.%d with compute shaders is needed; %q (%s) offers %d.%d (macOS stops at 4.1)",
			ErrUnsupported, major, minor, i.Renderer, i.Vendor, i.Major, i.Minor)
	}
	l := glw.QueryLimits()
	i.MaxWorkGroupCount, i.MaxWorkGroupSize = l.MaxWorkGroupCount, l.MaxWorkGroupSize
	i.MaxWorkGroupInvocations, i.MaxSharedMemory = l.MaxWorkGroupInvocations, l.MaxSharedMemory
	i.MaxSSBOBlockSize = l.MaxSSBOBlockSize
	d.named = glw.HaveNamed() && !i.ES && (i.Major > 4 || i.Major == 4 && i.Minor >= 5 || glw.HasExtension("GL_ARB_direct_state_access"))
	if !i.ES {
		i.TimerBits = glw.TimerBits()
		if glw.HasExtension("GL_NV_shader_thread_group") {
			i.SMCount = d.querySMCount()
		}
	}
	if !i.ES || i.Major > 3 || i.Minor >= 2 || glw.HasExtension("GL_OES_texture_buffer") || glw.HasExtension("GL_EXT_texture_buffer") {
		d.texBlock = 16 * l.MaxTextureBufferTexels
	}
	d.bindAlign = 16
	for d.bindAlign%max(l.SSBOOffsetAlignment, 1) != 0 || d.bindAlign%max(l.TextureBufferOffsetAlignment, 1) != 0 {
		d.bindAlign += 16
	}
	d.chooseKernels()
	return nil
}

// API names the context's API and version for people: "OpenGL 4.5 (Core
// Profile) Mesa 22.3.6", "OpenGL ES 3.2 Mesa 22.3.6" (an ES version string
// carries its own prefix).
func (i Info) API() string {
	if strings.HasPrefix(i.Version, "OpenGL") {
		return i.Version
	}
	return "OpenGL " + i.Version
}

// ShadingLanguage names the shading language version as API does:
// "GLSL 4.50", "OpenGL ES GLSL ES 3.20".
func (i Info) ShadingLanguage() string {
	if strings.HasPrefix(i.GLSLVersion, "OpenGL") {
		return i.GLSLVersion
	}
	return "GLSL " + i.GLSLVersion
}

// Info returns the device's strings and limits, also after Release. Safe
// from any goroutine.
func (d *Device) Info() Info { return d.info }

// Release deletes what the Device made (programs, the buffers it keeps
// between calls, and for an owned context the context itself and its
// thread). It is idempotent; using the Device
// afterwards panics, except Info, which goes on describing it. Owned: safe from any goroutine. Borrowed: call it on
// the host's thread with its context current.
func (d *Device) Release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.released {
		return
	}
	if d.borrowed {
		d.checkHostContext()
	}
	d.released = true
	if d.borrowed {
		s := glw.SaveState(stateBindings)
		d.releaseObjects()
		s.Restore()
		return
	}
	d.thread.Call(d.releaseContext)
	d.thread.Stop()
}

// releaseObjects deletes the programs, the staging buffers and the
// scratch buffer of resident transposes; on the device thread.
func (d *Device) releaseObjects() {
	for name, p := range d.programs {
		p.release()
		delete(d.programs, name)
	}
	if d.stager != nil {
		d.stager.release()
		d.stager = nil
	}
	if d.scratchT != 0 {
		d.scratchT.Release()
		d.scratchT, d.scratchBytes = 0, 0
	}
	d.drainPool()
	for i := range d.texs {
		d.texs[i].Release()
	}
	d.texBound = false
}

// releaseContext runs on the device thread.
func (d *Device) releaseContext() {
	if d.ctx == nil {
		return
	}
	d.releaseObjects()
	d.ctx.ReleaseCurrent()
	d.ctx.Release()
	d.ctx = nil
}

// call runs f on the device thread, or for a borrowed context on the
// caller's thread between a snapshot of the host's GL state and its
// restoration (inside a Scope, the Scope saves and restores). It panics if
// the Device was released or, borrowed, if its context is not current on
// the calling thread. f may change any GL state: what resident calls
// remember of their bindings (d.bound) is forgotten.
func (d *Device) call(f func()) {
	d.enter(saveAll, func() {
		d.bound = boundState{}
		f()
	})
}

// callKeeping is call for an f that changes no GL state but what resident
// calls record in d.bound (a resident product, a fence) and binds no
// buffer to the copy targets: a borrowed call then saves and restores
// those two bindings less.
func (d *Device) callKeeping(f func()) { d.enter(saveStorage, f) }

// query runs f, which reads GL objects without changing any GL state, as
// call does, except that a borrowed call saves and restores nothing: the
// host's bindings are not touched at all.
func (d *Device) query(f func()) { d.enter(saveNothing, f) }

// saving is what a borrowed call saves of the host's GL state and restores.
type saving int

const (
	saveNothing saving = iota // f changes no state (query)
	saveStorage               // the program and storage bindings (callKeeping)
	saveAll                   // those and the copy bindings (call)
)

// enter runs f as call does, saving and restoring what save says on a
// borrowed context outside a Scope.
func (d *Device) enter(save saving, f func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.released {
		panic("glcompute: use of a released Device")
	}
	if d.borrowed {
		d.checkHostContext()
		if !d.scoped && save != saveNothing {
			var s glw.State
			if save == saveAll {
				s = glw.SaveState(stateBindings)
			} else {
				s = glw.SaveStorageState(stateBindings)
			}
			d.saved = &s
			defer func() { d.saved = nil; s.Restore() }()
		}
		f()
		return
	}
	d.thread.Call(f)
}

// checkHostContext panics unless the borrowed context is current on the
// calling thread: GL calls without it would do nothing, or act on another
// context.
func (d *Device) checkHostContext() {
	if d.hostContext() != d.hostCurrent {
		panic("glcompute: borrowed Device used on a thread where its context is not current")
	}
}

// releaseObject runs free, which deletes one of d's GL objects, on the
// device thread. After d's Release it runs free directly for a borrowed
// context (the host's context still holds the object, and the caller is on
// the host's thread) and not at all for an owned one (its context took its
// objects with it).
func (d *Device) releaseObject(free func()) {
	if !d.isReleased() {
		d.call(free)
	} else if d.borrowed {
		free()
	}
}

// isReleased reports whether Release was called.
func (d *Device) isReleased() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.released
}

// Scope runs f, whose glmul calls on d (products, uploads, fences, ...)
// then share one save and restore of a borrowed context's GL state and one
// full memory barrier at the end: a host that queues several products a
// frame pays for these once. Inside, each product is followed only by a
// shader storage barrier, so later products see the earlier ones' results;
// the host's own draws and compute passes see them after Scope returns.
// Scope returns f's error. Scopes do not nest: a Scope inside f panics.
//
// Thread rule: a borrowed Device's Scope runs on the host's GL thread, and
// f must make its glmul calls on that thread; the host must not change the
// GL state that glmul uses (current program, shader storage bindings 0–2;
// with the cpu kernel also the active texture unit and units 0–1's buffer
// textures) inside f: resident products inside a Scope skip binding what
// the previous one left bound. An owned Device's Scope may be called from any goroutine; its
// calls from other goroutines during f get the lighter barrier too.
func (d *Device) Scope(f func() error) error {
	d.mu.Lock()
	if d.released {
		d.mu.Unlock()
		panic("glcompute: use of a released Device")
	}
	if d.scoped {
		d.mu.Unlock()
		panic("glcompute: nested Scope")
	}
	var saved glw.State
	if d.borrowed {
		d.checkHostContext()
		saved = glw.SaveState(stateBindings)
		d.saved = &saved
	}
	d.scoped = true
	d.bound = boundState{}
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.scoped = false
		d.saved = nil
		d.bound = boundState{}
		switch {
		case d.released:
		case d.borrowed:
			glw.BarrierAll()
			saved.Restore()
		default:
			d.thread.Call(glw.BarrierAll)
		}
	}()
	return f()
}

// nativeBinding is a window system's OpenGL binding (GLX, WGL): its
// current context, and its loader for GL functions.
type nativeBinding struct {
	name    string
	current func() uintptr
	getProc func(string) unsafe.Pointer
}

// stateBindings is how many indexed shader storage bindings glmul uses
// (0, 1, 2), all saved and restored in borrowed mode.
const stateBindings = 3

// NewDeviceFromCurrent returns a Device on the OpenGL context current on the
// calling thread: a game engine's, say. It starts no goroutine, opens no
// window and installs no debug callback. It loads the GL functions through
// EGL when an EGL context is current, else through GLX; loading again is
// harmless if the host already did. Every call saves the GL state it
// touches (current program, shader storage bindings 0–2 and the generic
// one; with a kernel that reads through buffer textures, the cpu family,
// also the active texture unit and the buffer textures of units 0 and 1)
// and restores it before returning.
//
// A borrowed Device never calls glGetError: that would consume the host's
// error flags and blame them on glmul. Compile and link failures are still
// reported.
//
// Thread rule: call NewDeviceFromCurrent, and every method of the Device it
// returns, on the host's GL thread with the same context current.
func NewDeviceFromCurrent(opts *Options) (*Device, error) {
	opts.check()
	d := &Device{programs: map[string]*program{}, borrowed: true, born: time.Now()}
	if opts != nil {
		d.opts = *opts
	}
	var getProc func(string) unsafe.Pointer
	switch {
	case egl.CurrentContext() != 0:
		d.hostContext, d.info.BackendNote = egl.CurrentContext, "the host's EGL context"
		getProc = egl.GetProcAddress
	case native.current() != 0:
		d.hostContext, d.info.BackendNote = native.current, "the host's "+native.name+" context"
		getProc = native.getProc
	default:
		return nil, fmt.Errorf("%w: no OpenGL context (EGL or %s) is current on this thread; make the host's context current first", ErrNoContext, native.name)
	}
	d.hostCurrent = d.hostContext()
	if d.opts.GetProcAddress != nil {
		getProc = d.opts.GetProcAddress
	}
	if d.opts.GLLoaded {
		glw.LoadNamed(getProc) // go-gl's are the host's; glmul's own extra entry points still need loading
	} else if err := glw.Init(getProc); err != nil {
		return nil, fmt.Errorf("%w: loading OpenGL functions from the current context: %w", ErrNoContext, err)
	}
	d.info.Backend = BackendBorrowed
	if err := d.initInfo(); err != nil {
		return nil, err
	}
	return d, nil
}

// EGLDevices lists the EGL devices that Options.Device can select, as
// "index: description" lines, or nil where EGL cannot enumerate devices.
func EGLDevices() []string {
	var out []string
	for _, dev := range egl.Devices() {
		out = append(out, dev.String())
	}
	return out
}
