package glcompute

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/glmul/glmul/glcompute/internal/egl"
	"github.com/glmul/glmul/glcompute/internal/glw"
)

// Scope runs f, whose glmul calls on d then share one save and restore of
// a borrowed context's GL state and one full memory barrier at the end:
// inside, each product is followed only by a shader storage barrier, so
// later products see earlier results and the host's own work sees them
// after Scope returns. Scope returns f's error; a Scope inside f panics.
//
// Thread rule: a borrowed Device's Scope and f's glmul calls run on the
// host's GL thread, and f must not change the GL state glmul uses (the
// package doc's list); an owned Device's Scope may be called from any
// goroutine.
func (d *Device) Scope(f func() error) error {
	d.mustBeOpen()
	d.mu.Lock()
	if d.released {
		d.mu.Unlock()
		panic("glcompute: use of a released Device")
	}
	if d.scoped {
		d.mu.Unlock()
		panic("glcompute: nested Scope")
	}
	var saved glw.State
	if d.borrowed {
		d.checkHostContext()
		saved = glw.SaveState(stateBindings)
		d.saved = &saved
	}
	d.scoped = true
	d.bound = boundState{}
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.scoped = false
		d.saved = nil
		d.bound = boundState{}
		switch {
		case d.released:
		case d.borrowed:
			glw.BarrierAll()
			saved.Restore()
		default:
			d.thread.Call(glw.BarrierAll)
		}
	}()
	return f()
}

// nativeBinding is a window system's OpenGL binding (GLX, WGL): its
// current context, and its loader for GL functions.
type nativeBinding struct {
	name    string
	current func() uintptr
	getProc func(string) unsafe.Pointer
}

// NewDeviceFromCurrent returns a Device on the OpenGL context current on
// the calling thread: a game engine's, say. It starts no goroutine, opens
// no window, installs no debug callback and never calls glGetError (that
// would consume the host's error flags). It loads the GL functions
// through EGL, else GLX, unless Options says the host has; every call
// saves the GL state it touches and restores it (the package doc's list).
//
// Thread rule: call NewDeviceFromCurrent, and every method of the Device
// it returns, on the host's GL thread with the same context current.
func NewDeviceFromCurrent(opts *Options) (*Device, error) {
	opts.check()
	d := &Device{programs: map[string]*program{}, borrowed: true, born: time.Now()}
	if opts != nil {
		d.opts = *opts
	}
	var getProc func(string) unsafe.Pointer
	switch {
	case egl.CurrentContext() != 0:
		d.hostContext, d.info.BackendNote = egl.CurrentContext, "the host's EGL context"
		getProc = egl.GetProcAddress
	case native.current() != 0:
		d.hostContext, d.info.BackendNote = native.current, "the host's "+native.name+" context"
		getProc = native.getProc
	default:
		return nil, fmt.Errorf("%w: no OpenGL context (EGL or %s) is current on this thread; make the host's context current first", ErrNoContext, native.name)
	}
	d.hostCurrent = d.hostContext()
	if d.opts.GetProcAddress != nil {
		getProc = d.opts.GetProcAddress
	}
	if d.opts.GLLoaded {
		if !glw.GoGLLoaded() { // calling into GL now would crash the process (SIGSEGV in cgo)
			return nil, fmt.Errorf("%w: Options.GLLoaded is set, but go-gl/gl v4.3-core's functions are not loaded: call gl.Init (or gl.InitWithProcAddrFunc) of github.com/go-gl/gl/v4.3-core/gl with the context current first, or leave GLLoaded false for glmul to load them", ErrNoContext)
		}
		glw.LoadNamed(getProc) // go-gl's are the host's; glmul's own extra entry points still need loading
	} else if err := glw.Init(getProc); err != nil {
		return nil, fmt.Errorf("%w: loading OpenGL functions from the current context: %w", ErrNoContext, err)
	}
	d.info.Backend = BackendBorrowed
	if err := d.initInfo(); err != nil {
		return nil, err
	}
	return d, nil
}
