// Package egl creates headless OpenGL contexts through EGL: on a chosen
// device (EGL_EXT_platform_device), else on Mesa's surfaceless platform
// (EGL_MESA_platform_surfaceless). No window system is needed.
//
// egl_unix.go holds the cgo calls; this file holds the policy and the error
// text (Gio's internal/egl split).
package egl

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/glmul/glmul/glcompute/internal/trace"
	"github.com/glmul/glmul/internal/cause"
)

// ErrNoContext is returned when no EGL display could give an OpenGL context
// of the requested version.
var ErrNoContext = errors.New("egl: no OpenGL context")

// Device describes one EGL device (EGL_EXT_device_enumeration).
type Device struct {
	// Index counts from 1 in EGL's enumeration order.
	Index int
	// Software is true for Mesa's CPU rasterizer (EGL_MESA_device_software).
	Software bool
	// DRMFile is the device node, e.g. /dev/dri/card0, if EGL gives one.
	DRMFile string
	// Renderer is the device's renderer name, if EGL gives one.
	Renderer string
	// Extensions are the device's extensions.
	Extensions string

	handle eglDevice
}

func (d Device) String() string {
	var parts []string
	if d.Renderer != "" {
		parts = append(parts, d.Renderer)
	}
	if d.DRMFile != "" {
		parts = append(parts, d.DRMFile)
	}
	if d.Software {
		parts = append(parts, "software (Mesa)")
	}
	if strings.Contains(d.Extensions, "EGL_NV_device_cuda") {
		parts = append(parts, "NVIDIA (CUDA device)")
	}
	if len(parts) == 0 {
		parts = append(parts, "unnamed device")
	}
	return fmt.Sprintf("%d: %s", d.Index, strings.Join(parts, ", "))
}

func hasExtension(list, name string) bool {
	for _, e := range strings.Fields(list) {
		if e == name {
			return true
		}
	}
	return false
}

// Devices lists the EGL devices, or nil if the EGL implementation cannot
// enumerate them.
func Devices() []Device {
	client := eglClientExtensions()
	if !hasExtension(client, "EGL_EXT_device_enumeration") && !hasExtension(client, "EGL_EXT_device_base") {
		return nil
	}
	handles, ok := eglQueryDevices()
	if !ok {
		return nil
	}
	devs := make([]Device, len(handles))
	for i, h := range handles {
		ext := deviceExtensions(h)
		d := Device{Index: i + 1, Extensions: ext, handle: h,
			Software: hasExtension(ext, "EGL_MESA_device_software")}
		if hasExtension(ext, "EGL_EXT_device_drm") {
			d.DRMFile = deviceDRMFile(h)
		}
		if hasExtension(ext, "EGL_EXT_device_query_name") {
			d.Renderer = deviceRenderer(h)
		}
		devs[i] = d
	}
	return devs
}

// Context is an OpenGL context with no surface.
type Context struct {
	// Platform says how the display was reached: "device" or "surfaceless".
	Platform string
	// Device is the EGL device, for the device platform.
	Device Device
	// Vendor is the EGL implementation's vendor string.
	Vendor string

	// ES: an OpenGL ES context (NewContextES).
	ES bool

	disp         eglDisplay
	ctx          eglContext
	cfg          eglConfig
	major, minor int
}

// displays counts the Contexts on each display: EGL returns one display per
// device, and eglTerminate would pull it from under every other context.
var displays = struct {
	sync.Mutex
	refs map[eglDisplay]int
}{refs: map[eglDisplay]int{}}

// NewContext creates an OpenGL context of at least version major.minor,
// core profile, or the driver's default context if major is 0.
//
// device ≥ 1 selects that EGL device (see Devices) and fails if it cannot
// give the context. device 0 tries the hardware devices first, then
// software ones, then Mesa's surfaceless platform.
//
// The context is not current; call MakeCurrent on the thread that will use it.
func NewContext(device, major, minor int) (*Context, error) {
	return newContextFor(false, device, major, minor)
}

// NewContextES creates an OpenGL ES context of version major.minor (3.1
// for compute shaders), on the devices NewContext tries.
func NewContextES(device, major, minor int) (*Context, error) {
	return newContextFor(true, device, major, minor)
}

// Available reports whether this platform's OpenGL has EGL at all
// (Linux and the BSDs; not Windows or macOS).
func Available() bool { return unavailable == "" }

// newContextFor creates a context on the EGL devices (device 0: the
// hardware ones first, then software; n: the nth only), else on Mesa's
// surfaceless platform, and names every attempt that failed; where an
// OpenGL ES context was asked for, its error has cause.ESContext.
func newContextFor(es bool, device, major, minor int) (*Context, error) {
	c, err := newContextOn(es, device, major, minor)
	if err != nil && es && !errors.Is(err, cause.NoEGL) {
		err = cause.Mark(err, cause.ESContext)
	}
	return c, err
}

// newContextOn is newContextFor without the cause.
func newContextOn(es bool, device, major, minor int) (*Context, error) {
	if unavailable != "" {
		return nil, cause.Mark(fmt.Errorf("%w: %s", ErrNoContext, unavailable), cause.NoEGL)
	}
	client := eglClientExtensions()
	trace.Stage("EGL: client extensions (libEGL and its vendors loaded)")
	if client == "" {
		return nil, fmt.Errorf("%w: EGL client extensions unavailable (is libEGL installed? error %s)", ErrNoContext, errorName(eglGetError()))
	}
	var tried []string
	if hasExtension(client, "EGL_EXT_platform_device") {
		c, failed, err := onDevices(es, device, major, minor)
		if c != nil || err != nil {
			return c, err
		}
		tried = failed
	} else if device > 0 {
		return nil, fmt.Errorf("%w: EGL device %d requested, but this EGL lacks EGL_EXT_platform_device", ErrNoContext, device)
	}
	if hasExtension(client, "EGL_MESA_platform_surfaceless") {
		if disp, ok := eglGetPlatformDisplay(platformSurfaceless, nil); !ok {
			tried = append(tried, fmt.Sprintf("surfaceless: no display (%s)", errorName(eglGetError())))
		} else if c, err := newContext(disp, es, major, minor); err != nil {
			tried = append(tried, fmt.Sprintf("surfaceless: %v", err))
		} else {
			c.Platform = "surfaceless"
			return c, nil
		}
	}
	if len(tried) == 0 {
		return nil, fmt.Errorf("%w: EGL offers neither EGL_EXT_platform_device nor EGL_MESA_platform_surfaceless (client extensions: %s)", ErrNoContext, client)
	}
	return nil, fmt.Errorf("%w: %s", ErrNoContext, strings.Join(tried, "; "))
}

// onDevices creates a context on the EGL devices in deviceOrder. It
// returns the context, or what each device answered, or an error where
// the one device asked for failed or does not exist.
func onDevices(es bool, device, major, minor int) (c *Context, tried []string, err error) {
	devs := Devices()
	trace.Stage(fmt.Sprintf("EGL: %d devices listed", len(devs)))
	if device > len(devs) {
		return nil, nil, fmt.Errorf("%w: EGL device %d requested, but EGL lists %d", ErrNoContext, device, len(devs))
	}
	for _, d := range deviceOrder(devs, device) {
		disp, ok := eglGetPlatformDisplay(platformDevice, unsafe.Pointer(d.handle))
		if !ok {
			tried = append(tried, fmt.Sprintf("device %s: no display (%s)", d, errorName(eglGetError())))
			continue
		}
		c, err := newContext(disp, es, major, minor)
		if err != nil {
			tried = append(tried, fmt.Sprintf("device %s: %v", d, err))
			continue
		}
		c.Platform, c.Device = "device", d
		return c, nil, nil
	}
	if device > 0 {
		return nil, nil, fmt.Errorf("%w: %s", ErrNoContext, strings.Join(tried, "; "))
	}
	return nil, tried, nil
}

// deviceOrder is the devices to try: the nth of devs for device n > 0,
// else the hardware ones, then the software ones.
func deviceOrder(devs []Device, device int) []Device {
	if device > 0 {
		return []Device{devs[device-1]}
	}
	var order []Device
	for _, d := range devs {
		if !d.Software {
			order = append(order, d)
		}
	}
	for _, d := range devs {
		if d.Software {
			order = append(order, d)
		}
	}
	return order
}

func newContext(disp eglDisplay, es bool, major, minor int) (*Context, error) {
	if _, _, ok := eglInitialize(disp); !ok {
		return nil, fmt.Errorf("eglInitialize: %s", errorName(eglGetError()))
	}
	trace.Stage("EGL: display initialized (the driver loaded)")
	displays.Lock()
	displays.refs[disp]++
	displays.Unlock()
	c := &Context{disp: disp, Vendor: displayVendor(disp), ES: es}
	fail := func(format string, args ...any) (*Context, error) {
		c.Release()
		return nil, fmt.Errorf(format, args...)
	}
	ext := displayExtensions(disp)
	if !hasExtension(ext, "EGL_KHR_surfaceless_context") {
		return fail("display lacks EGL_KHR_surfaceless_context")
	}
	if !bindAPI(es) {
		return fail("eglBindAPI: %s", errorName(eglGetError()))
	}
	cfg := noConfig()
	if !hasExtension(ext, "EGL_KHR_no_config_context") {
		var ok bool
		if cfg, ok = eglChoosePbufferConfig(disp, es); !ok {
			return fail("no EGL config for OpenGL: %s", errorName(eglGetError()))
		}
	}
	ctx, ok := eglCreateContext(disp, cfg, major, minor, nil, es)
	trace.Stage("EGL: context created")
	if !ok {
		if es {
			return fail("eglCreateContext (OpenGL ES %d.%d): %s", major, minor, errorName(eglGetError()))
		}
		if major > 0 {
			return fail("eglCreateContext (OpenGL %d.%d core): %s", major, minor, errorName(eglGetError()))
		}
		return fail("eglCreateContext: %s", errorName(eglGetError()))
	}
	c.ctx, c.cfg, c.major, c.minor = ctx, cfg, major, minor
	return c, nil
}

// NewShared creates a second context on c's display that shares c's
// objects (buffers, programs, sync objects), for another thread: a driver
// may run its commands on a queue of their own, beside c's.
func (c *Context) NewShared() (*Context, error) {
	displays.Lock()
	displays.refs[c.disp]++
	displays.Unlock()
	s := &Context{Platform: c.Platform, Device: c.Device, Vendor: c.Vendor, ES: c.ES, disp: c.disp, cfg: c.cfg, major: c.major, minor: c.minor}
	if !bindAPI(c.ES) {
		s.Release()
		return nil, fmt.Errorf("egl: eglBindAPI: %s", errorName(eglGetError()))
	}
	ctx, ok := eglCreateContext(c.disp, c.cfg, c.major, c.minor, c.ctx, c.ES)
	if !ok {
		s.Release()
		return nil, fmt.Errorf("egl: eglCreateContext (shared): %s", errorName(eglGetError()))
	}
	s.ctx = ctx
	return s, nil
}

// bindAPI selects OpenGL or, with es, OpenGL ES for the calling thread's
// next context calls.
func bindAPI(es bool) bool {
	if es {
		return eglBindOpenGLES()
	}
	return eglBindOpenGL()
}

// MakeCurrent binds the context to the calling thread.
func (c *Context) MakeCurrent() error {
	if !eglMakeCurrent(c.disp, c.ctx) {
		return fmt.Errorf("egl: eglMakeCurrent: %s", errorName(eglGetError()))
	}
	return nil
}

// ReleaseCurrent unbinds the calling thread's context.
func (c *Context) ReleaseCurrent() {
	eglReleaseCurrent(c.disp)
}

// Release destroys the context (it must not be current on another thread)
// and terminates the display when no other Context uses it. Release is
// idempotent.
func (c *Context) Release() {
	if c.disp == 0 {
		return
	}
	if c.ctx != nil {
		eglReleaseCurrent(c.disp)
		eglDestroyContext(c.disp, c.ctx)
		c.ctx = nil
	}
	displays.Lock()
	displays.refs[c.disp]--
	last := displays.refs[c.disp] <= 0
	if last {
		delete(displays.refs, c.disp)
	}
	displays.Unlock()
	if last {
		eglTerminate(c.disp)
	}
	c.disp = 0
}

var errorNames = map[int]string{
	0x3000: "EGL_SUCCESS", 0x3001: "EGL_NOT_INITIALIZED", 0x3002: "EGL_BAD_ACCESS",
	0x3003: "EGL_BAD_ALLOC", 0x3004: "EGL_BAD_ATTRIBUTE", 0x3005: "EGL_BAD_CONFIG",
	0x3006: "EGL_BAD_CONTEXT", 0x3007: "EGL_BAD_CURRENT_SURFACE", 0x3008: "EGL_BAD_DISPLAY",
	0x3009: "EGL_BAD_MATCH", 0x300A: "EGL_BAD_NATIVE_PIXMAP", 0x300B: "EGL_BAD_NATIVE_WINDOW",
	0x300C: "EGL_BAD_PARAMETER", 0x300D: "EGL_BAD_SURFACE", 0x300E: "EGL_CONTEXT_LOST",
	0x322B: "EGL_BAD_DEVICE_EXT",
}

func errorName(code int) string {
	if n, ok := errorNames[code]; ok {
		return n
	}
	return fmt.Sprintf("EGL error 0x%x", code)
}
