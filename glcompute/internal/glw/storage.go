package glw

/*
#include <stdint.h>
#include <stddef.h>
#if defined(_WIN32) && !defined(_WIN64)
#define GLMUL_APIENTRY __stdcall
#else
#define GLMUL_APIENTRY
#endif
typedef void (GLMUL_APIENTRY *glmulBufferStorageFn)(unsigned int target, ptrdiff_t size, const void *data, unsigned int flags);
static void glmulBufferStorageEXT(void *f, unsigned int target, ptrdiff_t size, const void *data, unsigned int flags) {
	((glmulBufferStorageFn)f)(target, size, data, flags);
}
*/
import "C"

import (
	"unsafe"

	"github.com/go-gl/gl/v4.3-core/gl"
)

// Storage is how a context makes immutable buffers (glBufferStorage),
// which glmul uses for persistent mappings and device-only buffers.
type Storage int

const (
	// StorageNone: no glBufferStorage; buffers are made with glBufferData.
	StorageNone Storage = iota
	// StorageCore: glBufferStorage (OpenGL 4.4, GL_ARB_buffer_storage),
	// through go-gl.
	StorageCore
	// StorageEXT: glBufferStorageEXT (OpenGL ES with GL_EXT_buffer_storage,
	// Mesa's ES 3.2 among them), the same call under ES's name, which
	// go-gl's desktop package does not load: through LoadStorageEXT's
	// pointer.
	StorageEXT
)

// bufferStorageEXT is glBufferStorageEXT; nil until LoadStorageEXT finds
// it.
var bufferStorageEXT unsafe.Pointer

// LoadStorageEXT looks up glBufferStorageEXT. Whether the current context
// may call it is the caller's to decide (an OpenGL ES context listing
// GL_EXT_buffer_storage): EGL hands out addresses for names a context
// lacks.
func LoadStorageEXT(getProc func(string) unsafe.Pointer) {
	bufferStorageEXT = getProc("glBufferStorageEXT")
}

// HaveStorageEXT reports whether LoadStorageEXT found the entry point.
func HaveStorageEXT() bool { return bufferStorageEXT != nil }

// bufferStorage is glBufferStorage(target, size, data, flags) as s says
// (StorageCore or StorageEXT).
func (s Storage) bufferStorage(target uint32, size int, data unsafe.Pointer, flags uint32) {
	if s == StorageEXT {
		C.glmulBufferStorageEXT(bufferStorageEXT, C.uint(target), C.ptrdiff_t(size), data, C.uint(flags))
		return
	}
	gl.BufferStorage(target, size, data, flags)
}
