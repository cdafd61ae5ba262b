//go:build linux || freebsd || netbsd || openbsd

package glcompute

import (
	"unsafe"

	"github.com/glmul/glmul/glcompute/internal/egl"
)

// newTestHost makes a host's own context, as an engine would, current on
// the calling (locked) thread: headless EGL here, no display needed.
func newTestHost() (getProc func(string) unsafe.Pointer, release func(), err error) {
	c, err := egl.NewContext(0, 4, 3)
	if err != nil {
		return nil, nil, err
	}
	if err := c.MakeCurrent(); err != nil {
		c.Release()
		return nil, nil, err
	}
	return egl.GetProcAddress, func() { c.ReleaseCurrent(); c.Release() }, nil
}

// platformBackend is the backend a test asks for: every one exists here.
func platformBackend(b Backend) (Backend, string) { return b, "" }
