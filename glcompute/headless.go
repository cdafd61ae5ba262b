package glcompute

import (
	"fmt"
	"unsafe"

	"github.com/glmul/glmul/glcompute/internal/egl"
)

// HeadlessContext is an OpenGL 4.3 core context with no window, for a host
// that owns its context on a server (a physics step with nothing to draw)
// and lends it to glmul through NewDeviceFromCurrent. Open is the simpler
// path when glmul may own the context.
//
// Thread rule: make it current, use it and release it on one thread, locked
// with runtime.LockOSThread.
type HeadlessContext struct {
	c *egl.Context
}

// NewHeadlessContext creates the context on an EGL device (see
// Options.Device; 0 picks a hardware GPU first) and makes it current on the
// calling thread.
func NewHeadlessContext(device int) (*HeadlessContext, error) {
	avoidZinkInlining()
	c, err := egl.NewContext(device, requiredMajor, requiredMinor)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoContext, err)
	}
	if err := c.MakeCurrent(); err != nil {
		c.Release()
		return nil, fmt.Errorf("%w: %w", ErrNoContext, err)
	}
	return &HeadlessContext{c: c}, nil
}

// GetProcAddress returns a GL function's address, for the host's own
// gl.InitWithProcAddrFunc.
func (h *HeadlessContext) GetProcAddress(name string) unsafe.Pointer { return egl.GetProcAddress(name) }

// Release destroys the context. Idempotent.
func (h *HeadlessContext) Release() { h.c.Release() }
