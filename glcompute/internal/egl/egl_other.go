//go:build !(linux || freebsd || netbsd || openbsd)

package egl

import "unsafe"

// Windows and macOS have no EGL in their OpenGL: contexts come from WGL
// (through GLFW) or not at all. The wrappers below fail, and egl.go's
// NewContext says why (unavailable).

// unavailable, when not "", is why this build has no EGL.
const unavailable = "EGL is not part of OpenGL on this platform (Windows: WGL, through -backend glfw)"

type (
	eglDisplay = uintptr
	eglContext = unsafe.Pointer
	eglConfig  = unsafe.Pointer
	eglDevice  = unsafe.Pointer
)

const (
	platformDevice      = 0x313F // EGL_PLATFORM_DEVICE_EXT
	platformSurfaceless = 0x31DD // EGL_PLATFORM_SURFACELESS_MESA
)

func eglGetError() int                                                { return 0x3001 } // EGL_NOT_INITIALIZED
func eglClientExtensions() string                                     { return "" }
func eglQueryDevices() ([]eglDevice, bool)                            { return nil, false }
func deviceExtensions(eglDevice) string                               { return "" }
func deviceDRMFile(eglDevice) string                                  { return "" }
func deviceRenderer(eglDevice) string                                 { return "" }
func eglGetPlatformDisplay(uint32, unsafe.Pointer) (eglDisplay, bool) { return 0, false }
func eglInitialize(eglDisplay) (major, minor int, ok bool)            { return 0, 0, false }
func eglTerminate(eglDisplay) bool                                    { return false }
func displayExtensions(eglDisplay) string                             { return "" }
func displayVendor(eglDisplay) string                                 { return "" }
func eglBindOpenGL() bool                                             { return false }
func eglBindOpenGLES() bool                                           { return false }
func eglChoosePbufferConfig(eglDisplay, bool) (eglConfig, bool)       { return nil, false }
func noConfig() eglConfig                                             { return nil }
func eglCreateContext(eglDisplay, eglConfig, int, int, eglContext, bool) (eglContext, bool) {
	return nil, false
}
func eglDestroyContext(eglDisplay, eglContext) bool { return false }
func eglMakeCurrent(eglDisplay, eglContext) bool    { return false }
func eglReleaseCurrent(eglDisplay) bool             { return false }

// GetProcAddress returns nil: there is no EGL.
func GetProcAddress(string) unsafe.Pointer { return nil }

// CurrentContext returns 0: there is no EGL.
func CurrentContext() uintptr { return 0 }
