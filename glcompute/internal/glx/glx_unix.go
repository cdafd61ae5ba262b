//go:build linux || freebsd || netbsd || openbsd

// Package glx asks GLX which context is current on the calling thread, so
// that a Device borrowing a host's GLX context can tell when it is called
// on a thread where that context is not current.
package glx

/*
#cgo pkg-config: gl
#include <stdlib.h>
#include <GL/glx.h>
*/
import "C"

import "unsafe"

// CurrentContext returns the GLX context current on the calling thread, 0
// if none.
func CurrentContext() uintptr { return uintptr(unsafe.Pointer(C.glXGetCurrentContext())) }

// GetProcAddress returns the address of the GL function name through
// glXGetProcAddress, as go-gl loads its own (never nil for a well-formed name: GLX does not say
// whether the current context supports it).
func GetProcAddress(name string) unsafe.Pointer {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return unsafe.Pointer(C.glXGetProcAddress((*C.GLubyte)(unsafe.Pointer(cs))))
}
