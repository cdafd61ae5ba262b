package glw

import (
	"unsafe"

	_ "github.com/go-gl/gl/v4.3-core/gl" // the pointers read below
)

// go-gl/gl v4.3-core keeps each GL function's address in an unexported
// package variable, nil until gl.Init or gl.InitWithProcAddrFunc: calling
// a function whose address is nil crashes the process inside cgo
// (SIGSEGV), which no recover catches. GoGLLoaded reads a few of them,
// for a host that says it loaded go-gl (Options.GLLoaded). Were one of
// these variables renamed in a later go-gl, it would read nil here and
// GoGLLoaded false after every Init (TestGoGLLoaded).
var (
	//go:linkname goglActiveShaderProgram github.com/go-gl/gl/v4.3-core/gl.gpActiveShaderProgram
	goglActiveShaderProgram unsafe.Pointer
	//go:linkname goglGetString github.com/go-gl/gl/v4.3-core/gl.gpGetString
	goglGetString unsafe.Pointer
	//go:linkname goglGetIntegerv github.com/go-gl/gl/v4.3-core/gl.gpGetIntegerv
	goglGetIntegerv unsafe.Pointer
	//go:linkname goglWaitSync github.com/go-gl/gl/v4.3-core/gl.gpWaitSync
	goglWaitSync unsafe.Pointer
)

// GoGLLoaded reports whether go-gl/gl v4.3-core's functions are loaded:
// the first and the last OpenGL 4.3 core function that
// InitWithProcAddrFunc loads (it stops at the first one missing), and the
// two that glmul calls first.
func GoGLLoaded() bool {
	return goglActiveShaderProgram != nil && goglGetString != nil && goglGetIntegerv != nil && goglWaitSync != nil
}
