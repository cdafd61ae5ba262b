package glw

/*
#include <stdint.h>
#if defined(_WIN32) && !defined(_WIN64)
#define GLMUL_APIENTRY __stdcall
#else
#define GLMUL_APIENTRY
#endif
typedef void (GLMUL_APIENTRY *glmulNamedParamFn)(unsigned int buffer, unsigned int pname, int64_t *params);
static void glmulGetNamedBufferParameteri64v(void *f, unsigned int buffer, unsigned int pname, int64_t *params) {
	((glmulNamedParamFn)f)(buffer, pname, params);
}
*/
import "C"

import (
	"unsafe"

	"github.com/go-gl/gl/v4.3-core/gl"
)

// getNamedBufferParameteri64v is glGetNamedBufferParameteri64v (OpenGL 4.5,
// GL_ARB_direct_state_access), which go-gl's 4.3 core package lacks; nil
// until LoadNamed finds it.
var getNamedBufferParameteri64v unsafe.Pointer

// LoadNamed looks up the direct-state-access entry point that NamedSize
// uses. Whether the current context may call it is the caller's to decide
// (OpenGL 4.5, or GL_ARB_direct_state_access listed): GLX hands out an
// address for any name.
func LoadNamed(getProc func(string) unsafe.Pointer) {
	getNamedBufferParameteri64v = getProc("glGetNamedBufferParameteri64v")
}

// HaveNamed reports whether LoadNamed found the entry point.
func HaveNamed() bool { return getNamedBufferParameteri64v != nil }

// NamedSize returns the buffer's size in bytes without binding it
// (glGetNamedBufferParameteri64v): the buffer's bindings, and what the
// driver does when a buffer is bound, stay as the host left them. Call it
// only where HaveNamed and the context supports direct state access.
//
// Why not Size: one NVIDIA driver loses a host's glBufferSubData to the
// next compute dispatch when the buffer was bound to any other target
// between its glBufferData and that glBufferSubData: the dispatch reads
// the glBufferData contents (issue 22; docs/DRIVERS.md, "NVIDIA and
// glBufferSubData", gives the sequence). A glmul query that binds a
// host's buffer in WrapBuffer is exactly that bind.
func (b Buffer) NamedSize() int64 {
	var v C.int64_t
	C.glmulGetNamedBufferParameteri64v(getNamedBufferParameteri64v, C.uint(b), C.uint(gl.BUFFER_SIZE), &v)
	return int64(v)
}
