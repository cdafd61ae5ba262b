// Package glfwctx creates an OpenGL context in a hidden GLFW window, the
// design card's default wherever a display exists.
//
// GLFW is process-global: glfw.Init and glfw.Terminate are reference-counted
// here and every GLFW call is made under one lock. go-gl/glfw (v3.3) panics
// on some GLFW errors, and with no reachable display glfw.Init logs the
// platform error and returns nil, after which the next call panics with
// "not initialized"; this package turns those panics into errors.
package glfwctx

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"github.com/go-gl/glfw/v3.3/glfw"

	"github.com/glmul/glmul/glcompute/internal/window"
)

// ErrNoDisplay is returned when there is no display to open a window on.
var ErrNoDisplay = window.ErrNoDisplay

var lib struct {
	sync.Mutex
	refs int
}

// Context is a hidden window's OpenGL context.
type Context struct {
	win  *glfw.Window
	held bool // holds one of lib.refs
}

// HaveDisplay reports whether DISPLAY or WAYLAND_DISPLAY is set.
func HaveDisplay() bool { return window.HaveDisplay() }

// guard runs f and turns a go-gl/glfw panic into an error.
func guard(what string, f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("glfw: %s: %v", what, p)
		}
	}()
	return f()
}

// NewContext opens a hidden 1×1 window with an OpenGL context of at least
// version major.minor, core profile, or the driver's default context if
// major is 0. The context is left current on the calling thread, which must
// be the thread that uses it.
func NewContext(major, minor int) (*Context, error) {
	if !HaveDisplay() {
		return nil, fmt.Errorf("%w: neither DISPLAY nor WAYLAND_DISPLAY is set", ErrNoDisplay)
	}
	lib.Lock()
	defer lib.Unlock()
	if lib.refs == 0 {
		err := guard("init", func() error {
			if err := glfw.Init(); err != nil {
				return err
			}
			// Init returns nil even when the display cannot be opened; a
			// call that needs the library initialized tells.
			glfw.DefaultWindowHints()
			return nil
		})
		if err != nil {
			glfw.Terminate()
			if runtime.GOOS == "windows" {
				return nil, fmt.Errorf("%w: GLFW cannot make a window here (no desktop session? %v)", ErrNoDisplay, err)
			}
			return nil, fmt.Errorf("%w: cannot open display %q (%v)", ErrNoDisplay, os.Getenv("DISPLAY"), err)
		}
	}
	lib.refs++
	c := &Context{held: true}
	err := guard("create window", func() error {
		glfw.DefaultWindowHints()
		glfw.WindowHint(glfw.Visible, glfw.False)
		glfw.WindowHint(glfw.Focused, glfw.False)
		if major > 0 {
			glfw.WindowHint(glfw.ContextVersionMajor, major)
			glfw.WindowHint(glfw.ContextVersionMinor, minor)
			glfw.WindowHint(glfw.OpenGLProfile, glfw.OpenGLCoreProfile)
			glfw.WindowHint(glfw.OpenGLForwardCompatible, glfw.True)
		}
		w, err := glfw.CreateWindow(1, 1, "glmul", nil, nil)
		if err != nil {
			return err
		}
		if w == nil {
			return errors.New("no window (a platform error was logged above)")
		}
		c.win = w
		w.MakeContextCurrent()
		return nil
	})
	if err != nil {
		c.releaseLocked()
		return nil, err
	}
	return c, nil
}

// MakeCurrent binds the context to the calling thread.
func (c *Context) MakeCurrent() error {
	return guard("make current", func() error { c.win.MakeContextCurrent(); return nil })
}

// ReleaseCurrent unbinds the calling thread's context.
func (c *Context) ReleaseCurrent() {
	guard("detach", func() error { glfw.DetachCurrentContext(); return nil })
}

// Release destroys the window and, with the last context, terminates GLFW.
// It must run on the context's thread. Release is idempotent.
func (c *Context) Release() {
	lib.Lock()
	defer lib.Unlock()
	c.releaseLocked()
}

func (c *Context) releaseLocked() {
	if c.win != nil {
		guard("destroy", func() error {
			glfw.DetachCurrentContext()
			c.win.Destroy()
			return nil
		})
		c.win = nil
	}
	if c.held {
		c.held = false
		lib.refs--
		if lib.refs == 0 {
			glfw.Terminate()
		}
	}
}

// GetProcAddress returns the address of a GL function for the current
// context, for gl.InitWithProcAddrFunc.
func GetProcAddress(name string) unsafe.Pointer { return glfw.GetProcAddress(name) }
