package glcompute

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unsafe"

	"github.com/glmul/glmul/glcompute/internal/egl"
	"github.com/glmul/glmul/glcompute/internal/glw"
	"github.com/glmul/glmul/glcompute/internal/thread"
	"github.com/glmul/glmul/glcompute/internal/trace"
	"github.com/glmul/glmul/glcompute/internal/window"
	"github.com/glmul/glmul/internal/cause"
)

// Open creates a context as opts say, checks that it offers OpenGL 4.3
// compute shaders, and returns the Device. The caller must Release it.
func Open(opts *Options) (*Device, error) {
	trace.Stage("")
	opts.check()
	d := &Device{thread: thread.New(), programs: map[string]*program{}, born: time.Now()}
	if opts != nil {
		d.opts = *opts
	}
	if d.opts.Backend == "" {
		d.opts.Backend = backendAuto
	}
	switch d.opts.Backend {
	case backendAuto, BackendGLFW, BackendEGL, BackendGLES:
	default:
		d.thread.Stop()
		return nil, fmt.Errorf("glcompute: unknown backend %q: use auto, glfw, egl or gles", d.opts.Backend)
	}
	var err error
	trace.Stage("Open: the device thread started")
	d.thread.Call(func() { err = d.open() })
	if err != nil {
		d.thread.Call(d.releaseContext)
		d.thread.Stop()
		return nil, err
	}
	return d, nil
}

// open runs on the device thread.
func (d *Device) open() error {
	avoidZinkInlining()
	backend := d.opts.Backend
	var autoNote string
	if backend == backendAuto && !egl.Available() {
		backend = BackendGLFW // Windows: WGL or nothing, and its own error
	}
	if backend == backendAuto {
		backend = BackendEGL
		if window.GLFW != nil && window.HaveDisplay() {
			if err := d.openGLFW(requiredMajor, requiredMinor); err == nil {
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
		err = d.openGLFW(requiredMajor, requiredMinor)
	case BackendEGL:
		err = d.openEGL(requiredMajor, requiredMinor)
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
			return cause.Mark(fmt.Errorf("%w: %w", ErrNoContext, err), cause.NoDisplay)
		}
		// The display works but refused a 4.3 core context: find out what
		// it offers, for an error that says so.
		if major > 0 {
			if probe, perr := w.New(0, 0); perr == nil {
				found := describeCurrent(w.GetProcAddress)
				probe.Release()
				return cause.Mark(fmt.Errorf("%w: OpenGL %d.%d core with compute shaders is needed; the GLFW (GLX) driver offers %s", ErrUnsupported, major, minor, found), cause.GLVersion)
			}
		}
		return fmt.Errorf("%w: %w", ErrNoContext, err)
	}
	d.ctx = c
	return d.loadGL(w.GetProcAddress)
}

func (d *Device) openEGL(major, minor int) error {
	c, err := egl.NewContext(d.opts.Device, major, minor)
	trace.Stage("EGL: context ready")
	if err != nil {
		if probe, perr := egl.NewContext(d.opts.Device, 0, 0); perr == nil {
			found := "an unknown version"
			if probe.MakeCurrent() == nil {
				found = describeCurrent(egl.GetProcAddress)
				probe.ReleaseCurrent()
			}
			probe.Release()
			return cause.Mark(fmt.Errorf("%w: OpenGL %d.%d core with compute shaders is needed; the EGL driver offers %s", ErrUnsupported, major, minor, found), cause.GLVersion)
		}
		return fmt.Errorf("%w: %w", ErrNoContext, err)
	}
	d.ctx = c
	if err := c.MakeCurrent(); err != nil {
		return fmt.Errorf("%w: %w", ErrNoContext, err)
	}
	trace.Stage("EGL: context made current")
	switch c.Platform {
	case "device":
		d.info.BackendNote = "EGL device " + c.Device.String()
		d.info.EGLDevice = c.Device.Index
	default:
		d.info.BackendNote = "EGL " + c.Platform + " platform"
	}
	return d.loadGL(egl.GetProcAddress)
}

// openGLES makes an OpenGL ES 3.1 context through headless EGL: the
// API of phones, boards and ANGLE, whose core has compute shaders.
func (d *Device) openGLES() error {
	c, err := egl.NewContextES(d.opts.Device, requiredMajorES, requiredMinorES)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrNoContext, err)
	}
	d.ctx = c
	if err := c.MakeCurrent(); err != nil {
		return fmt.Errorf("%w: %w", ErrNoContext, err)
	}
	trace.Stage("EGL: context made current")
	d.info.ES = true
	d.info.BackendNote = "OpenGL ES through EGL " + c.Platform
	if c.Platform == "device" {
		d.info.BackendNote = "OpenGL ES through EGL device " + c.Device.String()
		d.info.EGLDevice = c.Device.Index
	}
	if err := d.loadGL(egl.GetProcAddress); err != nil {
		return err
	}
	glw.LoadStorageEXT(egl.GetProcAddress) // ES's name for glBufferStorage (bufferStorage)
	return nil
}

func (d *Device) loadGL(getProc func(string) unsafe.Pointer) error {
	if err := glw.Init(getProc); err != nil {
		return fmt.Errorf("%w: loading OpenGL functions: %w", ErrUnsupported, err)
	}
	trace.Stage("GL: functions loaded (go-gl)")
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
	major, minor := requiredMajor, requiredMinor
	if i.ES {
		major, minor = requiredMajorES, requiredMinorES
	}
	if i.Major < major || i.Major == major && i.Minor < minor {
		return cause.Mark(fmt.Errorf("%w: OpenGL %d.%d with compute shaders is needed; %q (%s) offers %d.%d (macOS stops at 4.1)",
			ErrUnsupported, major, minor, i.Renderer, i.Vendor, i.Major, i.Minor), cause.GLVersion)
	}
	trace.Stage("GL: strings and version read")
	l := glw.QueryLimits()
	trace.Stage("GL: limits read")
	i.MaxWorkGroupCount, i.MaxWorkGroupSize = l.MaxWorkGroupCount, l.MaxWorkGroupSize
	i.MaxWorkGroupInvocations, i.MaxSharedMemory = l.MaxWorkGroupInvocations, l.MaxSharedMemory
	i.MaxSSBOBlockSize = l.MaxSSBOBlockSize
	d.named = glw.HaveNamed() && !i.ES && (i.Major > 4 || i.Major == 4 && i.Minor >= 5 || glw.HasExtension("GL_ARB_direct_state_access"))
	if !i.ES {
		i.TimerBits = glw.TimerBits()
		if glw.HasExtension("GL_NV_shader_thread_group") {
			i.SMCount = d.querySMCount()
			trace.Stage("SM count: smcount.comp compiled, dispatched, read back")
		}
	}
	if !i.ES || i.Major > 3 || i.Minor >= 2 || glw.HasExtension("GL_OES_texture_buffer") || glw.HasExtension("GL_EXT_texture_buffer") {
		d.texBlock = 16 * l.MaxTextureBufferTexels
		if strings.Contains(i.Renderer, "softpipe") {
			// Mesa 22.3.6's softpipe reports 65536 texels and fetches
			// the texels past 32768 wrong (TestTexelsPastHalf).
			d.texBlock /= 2
		}
	}
	d.storage = d.bufferStorage()
	d.loopBudget = driverLoopBudget(i.Renderer)
	d.fp64 = d.checkFloat64()
	d.bindAlign = 16
	for d.bindAlign%max(l.SSBOOffsetAlignment, 1) != 0 || d.bindAlign%max(l.TextureBufferOffsetAlignment, 1) != 0 {
		d.bindAlign += 16
	}
	trace.Stage("GL: extensions and alignments read")
	d.chooseKernels()
	trace.Stage("kernel choice (tuning cache read, configurations looked up)")
	return nil
}
