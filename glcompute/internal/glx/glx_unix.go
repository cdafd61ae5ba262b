//go:build linux || freebsd || netbsd || openbsd

// Package glx asks GLX which context is current on the calling thread, so
// that a Device borrowing a host's GLX context can tell when it is called
// on a thread where that context is not current.
package glx

/*
#cgo pkg-config: gl
#include <GL/glx.h>
*/
import "C"

import "unsafe"

// CurrentContext returns the GLX context current on the calling thread, 0
// if none.
func CurrentContext() uintptr { return uintptr(unsafe.Pointer(C.glXGetCurrentContext())) }
