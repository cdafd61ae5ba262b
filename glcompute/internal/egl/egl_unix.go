//go:build linux || freebsd || netbsd || openbsd

package egl

/*
#cgo pkg-config: egl
#include <stdlib.h>
#include <EGL/egl.h>
#include <EGL/eglext.h>

// Extension entry points are looked up at every call: they are only valid
// once a client extension says so, and the lookups are rare.
static EGLBoolean glmulQueryDevices(EGLint max, EGLDeviceEXT *devs, EGLint *n) {
	PFNEGLQUERYDEVICESEXTPROC f = (PFNEGLQUERYDEVICESEXTPROC)eglGetProcAddress("eglQueryDevicesEXT");
	if (f == NULL) return EGL_FALSE;
	return f(max, devs, n);
}

static const char *glmulQueryDeviceString(EGLDeviceEXT dev, EGLint name) {
	PFNEGLQUERYDEVICESTRINGEXTPROC f = (PFNEGLQUERYDEVICESTRINGEXTPROC)eglGetProcAddress("eglQueryDeviceStringEXT");
	if (f == NULL) return NULL;
	return f(dev, name);
}

static EGLDisplay glmulGetPlatformDisplay(EGLenum platform, void *native) {
	PFNEGLGETPLATFORMDISPLAYEXTPROC f = (PFNEGLGETPLATFORMDISPLAYEXTPROC)eglGetProcAddress("eglGetPlatformDisplayEXT");
	if (f == NULL) return EGL_NO_DISPLAY;
	return f(platform, native, NULL);
}

static EGLDeviceEXT glmulDeviceAt(EGLDeviceEXT *devs, int i) { return devs[i]; }
*/
import "C"

import (
	"unsafe"
)

// These wrappers are the only cgo calls of the package. Each returns its
// value and whether EGL reported success; egl.go turns failures into errors
// with eglGetError's code.

type (
	eglDisplay = C.EGLDisplay
	eglContext = C.EGLContext
	eglConfig  = C.EGLConfig
	eglDevice  = C.EGLDeviceEXT
)

// unavailable is "": EGL is this platform's (glvnd's libEGL, Mesa's or a
// GPU vendor's).
const unavailable = ""

const (
	platformDevice      = C.EGL_PLATFORM_DEVICE_EXT
	platformSurfaceless = C.EGL_PLATFORM_SURFACELESS_MESA
)

func eglGetError() int { return int(C.eglGetError()) }

func eglQueryClientString(name C.EGLint) string {
	return goString(C.eglQueryString(C.EGLDisplay(C.EGL_NO_DISPLAY), name))
}

func eglClientExtensions() string { return eglQueryClientString(C.EGL_EXTENSIONS) }

func eglQueryDevices() ([]eglDevice, bool) {
	var n C.EGLint
	if C.glmulQueryDevices(0, nil, &n) != C.EGL_TRUE {
		return nil, false
	}
	if n == 0 {
		return nil, true
	}
	buf := (*C.EGLDeviceEXT)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(C.EGLDeviceEXT(nil)))))
	defer C.free(unsafe.Pointer(buf))
	if C.glmulQueryDevices(n, buf, &n) != C.EGL_TRUE {
		return nil, false
	}
	devs := make([]eglDevice, n)
	for i := range devs {
		devs[i] = C.glmulDeviceAt(buf, C.int(i))
	}
	return devs, true
}

func eglQueryDeviceString(d eglDevice, name C.EGLint) string {
	return goString(C.glmulQueryDeviceString(d, name))
}

// goString is C.GoString that reads NULL as "".
func goString(s *C.char) string {
	if s == nil {
		return ""
	}
	return C.GoString(s)
}

func deviceExtensions(d eglDevice) string { return eglQueryDeviceString(d, C.EGL_EXTENSIONS) }
func deviceDRMFile(d eglDevice) string    { return eglQueryDeviceString(d, C.EGL_DRM_DEVICE_FILE_EXT) }
func deviceRenderer(d eglDevice) string   { return eglQueryDeviceString(d, C.EGL_RENDERER_EXT) }

func eglGetPlatformDisplay(platform C.EGLenum, native unsafe.Pointer) (eglDisplay, bool) {
	d := C.glmulGetPlatformDisplay(platform, native)
	return d, d != C.EGLDisplay(C.EGL_NO_DISPLAY)
}

func eglInitialize(d eglDisplay) (major, minor int, ok bool) {
	var maj, min C.EGLint
	ok = C.eglInitialize(d, &maj, &min) == C.EGL_TRUE
	return int(maj), int(min), ok
}

func eglTerminate(d eglDisplay) bool { return C.eglTerminate(d) == C.EGL_TRUE }

func eglQueryDisplayString(d eglDisplay, name C.EGLint) string {
	return goString(C.eglQueryString(d, name))
}

func displayExtensions(d eglDisplay) string { return eglQueryDisplayString(d, C.EGL_EXTENSIONS) }
func displayVendor(d eglDisplay) string     { return eglQueryDisplayString(d, C.EGL_VENDOR) }

func eglBindOpenGL() bool { return C.eglBindAPI(C.EGL_OPENGL_API) == C.EGL_TRUE }

func eglBindOpenGLES() bool { return C.eglBindAPI(C.EGL_OPENGL_ES_API) == C.EGL_TRUE }

// eglChoosePbufferConfig picks a config for displays without
// EGL_KHR_no_config_context.
func eglChoosePbufferConfig(d eglDisplay, es bool) (eglConfig, bool) {
	renderable := C.EGLint(C.EGL_OPENGL_BIT)
	if es {
		renderable = C.EGL_OPENGL_ES3_BIT_KHR
	}
	attribs := []C.EGLint{
		C.EGL_SURFACE_TYPE, C.EGL_PBUFFER_BIT,
		C.EGL_RENDERABLE_TYPE, renderable,
		C.EGL_NONE,
	}
	var cfg C.EGLConfig
	var n C.EGLint
	ok := C.eglChooseConfig(d, &attribs[0], &cfg, 1, &n) == C.EGL_TRUE && n > 0
	return cfg, ok
}

func noConfig() eglConfig { return C.EGLConfig(C.EGL_NO_CONFIG_KHR) }

// eglCreateContext creates an OpenGL context: core profile of the given
// version, or the driver's default context if major is 0, or with es an
// OpenGL ES context of that version; sharing share's objects unless share
// is nil.
func eglCreateContext(d eglDisplay, cfg eglConfig, major, minor int, share eglContext, es bool) (eglContext, bool) {
	attribs := []C.EGLint{C.EGL_NONE}
	if es {
		attribs = []C.EGLint{C.EGL_CONTEXT_MAJOR_VERSION, C.EGLint(major), C.EGL_CONTEXT_MINOR_VERSION, C.EGLint(minor), C.EGL_NONE}
	} else if major > 0 {
		attribs = []C.EGLint{
			C.EGL_CONTEXT_MAJOR_VERSION, C.EGLint(major),
			C.EGL_CONTEXT_MINOR_VERSION, C.EGLint(minor),
			C.EGL_CONTEXT_OPENGL_PROFILE_MASK, C.EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT,
			C.EGL_NONE,
		}
	}
	if share == nil {
		share = C.EGLContext(C.EGL_NO_CONTEXT)
	}
	ctx := C.eglCreateContext(d, cfg, share, &attribs[0])
	return ctx, ctx != C.EGLContext(C.EGL_NO_CONTEXT)
}

func eglDestroyContext(d eglDisplay, ctx eglContext) bool {
	return C.eglDestroyContext(d, ctx) == C.EGL_TRUE
}

func eglMakeCurrent(d eglDisplay, ctx eglContext) bool {
	return C.eglMakeCurrent(d, C.EGLSurface(C.EGL_NO_SURFACE), C.EGLSurface(C.EGL_NO_SURFACE), ctx) == C.EGL_TRUE
}

func eglReleaseCurrent(d eglDisplay) bool {
	return C.eglMakeCurrent(d, C.EGLSurface(C.EGL_NO_SURFACE), C.EGLSurface(C.EGL_NO_SURFACE), C.EGLContext(C.EGL_NO_CONTEXT)) == C.EGL_TRUE
}

// GetProcAddress returns the address of a GL or EGL function, for
// gl.InitWithProcAddrFunc.
func GetProcAddress(name string) unsafe.Pointer {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return unsafe.Pointer(C.eglGetProcAddress(cname))
}

// CurrentContext returns the EGL context current on the calling thread, 0
// if none.
func CurrentContext() uintptr { return uintptr(C.eglGetCurrentContext()) }
