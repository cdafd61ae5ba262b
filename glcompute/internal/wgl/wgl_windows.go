// Package wgl asks WGL, Windows' OpenGL binding, which context is current
// on the calling thread and where a GL function is: for a Device that
// borrows a host's context (GLFW, SDL and raylib make WGL contexts on
// Windows). No cgo: opengl32.dll is called through syscall.
package wgl

import (
	"syscall"
	"unsafe"
)

var (
	opengl32          = syscall.NewLazyDLL("opengl32.dll")
	getCurrentContext = opengl32.NewProc("wglGetCurrentContext")
	getProcAddress    = opengl32.NewProc("wglGetProcAddress")
)

// CurrentContext returns the WGL context (HGLRC) current on the calling
// thread, 0 if none.
func CurrentContext() uintptr {
	if getCurrentContext.Find() != nil {
		return 0
	}
	r, _, _ := getCurrentContext.Call()
	return r
}

// GetProcAddress returns the address of GL function name for the current
// context, nil if the driver has none: wglGetProcAddress for extensions
// and versions past 1.1, opengl32.dll's own exports for OpenGL 1.1 (for
// which wglGetProcAddress returns 0, 1, 2, 3 or -1), as go-gl loads them.
func GetProcAddress(name string) unsafe.Pointer {
	cname, err := syscall.BytePtrFromString(name)
	if err != nil || getProcAddress.Find() != nil {
		return nil
	}
	r, _, _ := getProcAddress.Call(uintptr(unsafe.Pointer(cname)))
	if r > 3 && r != ^uintptr(0) {
		return *(*unsafe.Pointer)(unsafe.Pointer(&r))
	}
	p := opengl32.NewProc(name)
	if p.Find() != nil {
		return nil
	}
	a := p.Addr()
	return *(*unsafe.Pointer)(unsafe.Pointer(&a))
}
