package glcompute

import (
	"time"

	"github.com/glmul/glmul/glcompute/internal/glw"
)

// Fence marks the GPU work queued so far (glFenceSync).
//
// Thread rule: as the Device's methods.
type Fence struct {
	d *Device
	f glw.Fence
}

// Fence returns a fence after all work queued on the Device until now,
// and flushes it to the GPU.
func (d *Device) Fence() *Fence {
	f := &Fence{d: d}
	d.callKeeping(func() {
		f.f = glw.NewFence()
		glw.Flush()
	})
	return f
}

// Wait waits up to timeout for the fence and reports whether it passed.
// Wait(0) polls without blocking. It panics after Release.
func (f *Fence) Wait(timeout time.Duration) bool {
	if f.d == nil {
		panic("glcompute: use of a released Fence")
	}
	var ok bool
	f.d.call(func() { ok = f.f.Signaled(uint64(timeout.Nanoseconds())) })
	return ok
}

// Release deletes the fence. Idempotent, and safe after the Device's
// Release (an owned Device's fences went with its context; a borrowed
// Device's are deleted here, on the host's thread).
func (f *Fence) Release() {
	if f.d != nil {
		f.d.releaseObject(f.f.Release)
	}
	f.d = nil
}
