package glw

import (
	"testing"
	"unsafe"

	"github.com/go-gl/gl/v4.3-core/gl"
)

// TestGoGLLoaded: false before go-gl's Init, true after one that found
// every function (a stand-in loader: no GL function is called), false
// again after one that found none. It fails where go-gl renamed the
// variables GoGLLoaded reads.
func TestGoGLLoaded(t *testing.T) {
	if GoGLLoaded() {
		t.Fatal("GoGLLoaded before any Init")
	}
	var stub byte
	if err := gl.InitWithProcAddrFunc(func(string) unsafe.Pointer { return unsafe.Pointer(&stub) }); err != nil {
		t.Fatal(err)
	}
	if !GoGLLoaded() {
		t.Error("GoGLLoaded false after an Init that found every function")
	}
	if err := gl.InitWithProcAddrFunc(func(string) unsafe.Pointer { return nil }); err == nil {
		t.Fatal("Init with no functions succeeded")
	}
	if GoGLLoaded() {
		t.Error("GoGLLoaded after an Init that found no function")
	}
}
