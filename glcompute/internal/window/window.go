// Package window is where a windowing back end (GLFW) registers itself
// with glcompute, so that only programs that ask for one link it: a game
// engine that borrows its own context (raylib, which compiles its own
// copy of GLFW's C sources) must not link a second GLFW. Package
// glcompute/glfw fills GLFW in its init; glcompute reads it.
package window

import (
	"errors"
	"os"
	"runtime"
	"unsafe"
)

// Context is a windowing library's OpenGL context, current on the thread
// that made it.
type Context interface {
	MakeCurrent() error
	ReleaseCurrent()
	Release()
}

// Maker opens contexts of one windowing library.
type Maker struct {
	// New opens a hidden window with a core context of at least
	// major.minor (the driver's default context when major is 0), current
	// on the calling thread. Its error wraps ErrNoDisplay when there is
	// no display to open a window on.
	New func(major, minor int) (Context, error)
	// GetProcAddress loads GL functions for the current context.
	GetProcAddress func(name string) unsafe.Pointer
}

// GLFW is the GLFW back end, nil unless package glcompute/glfw is linked in.
var GLFW *Maker

// ErrNoDisplay says there is no display to open a window on.
var ErrNoDisplay = errors.New("glfw: no display")

// HaveDisplay reports whether a window can open: always on Windows (its
// desktop, or Wine's), else where DISPLAY or WAYLAND_DISPLAY is set.
func HaveDisplay() bool {
	return runtime.GOOS == "windows" || os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != ""
}
